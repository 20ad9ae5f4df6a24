// Command gallery renders every UI component on sample pages so the design
// system can be reviewed in a browser (it is not part of the server).
//
//	go run ./views/gallery -out /tmp/gallery.html           # write the admin page
//	go run ./views/gallery -addr 127.0.0.1:8099             # serve /, /login, /staff and /assets/
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"leadpipe/views/assets"
	"leadpipe/views/components"
	"leadpipe/views/layouts"
)

func main() {
	out := flag.String("out", "", "write the gallery page to this HTML file")
	addr := flag.String("addr", "", "serve the gallery on this address, e.g. 127.0.0.1:8099")
	flag.Parse()
	if *out == "" && *addr == "" {
		*out = "gallery.html"
	}
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		if err := render(f, "/"); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", *out)
	}
	if *addr != "" {
		mux := http.NewServeMux()
		mux.Handle(assets.Prefix, assets.Handler())
		for _, p := range []string{"/", "/login", "/staff"} {
			mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != p {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				if err := render(w, p); err != nil {
					log.Print(err)
				}
			})
		}
		fmt.Println("serving on http://" + *addr)
		log.Fatal(http.ListenAndServe(*addr, mux))
	}
}

func render(w io.Writer, page string) error {
	now := time.Date(2026, 3, 3, 14, 7, 0, 0, time.UTC)
	var c templ.Component
	switch page {
	case "/login":
		c = loginPage("Check both and try again. After 5 failed attempts, wait a minute.")
	case "/staff":
		c = staffEmpty(layouts.Page{
			Title: "Board", TenantName: "Acme Roofing", Active: "board",
			User: &layouts.User{Name: "Sam Rivera", Email: "sam@acme.test", Role: "staff"},
		})
	default:
		c = galleryPage(layouts.Page{
			Title:      "Inbox",
			TenantName: "Acme Roofing & Solar",
			Active:     "leads",
			OpenAlerts: 3,
			Flash:      "Lead “Jordan Lee” moved to Qualified.",
			User:       &layouts.User{Name: "Dana Okafor", Email: "dana@acme.test", Role: "admin"},
		}, sampleData(now))
	}
	return c.Render(context.Background(), w)
}

func sampleData(now time.Time) galleryData {
	rng := rand.New(rand.NewPCG(7, 11))
	leads := []sampleLead{
		{"1", "Jordan Lee", "jordan.lee@northwind.example", "Northwind Traders", "HubSpot forms", "qualified", "Dana Okafor", now.Add(-4 * time.Minute)},
		{"2", "Priya Raman", "priya@contoso.example", "Contoso Ltd", "Typeform", "new", "—", now.Add(-38 * time.Minute)},
		{"3", "Marcus Chen", "m.chen@fabrikam.example", "Fabrikam", "HubSpot forms", "contacted", "Sam Rivera", now.Add(-3 * time.Hour)},
		{"4", "Ana Souza", "ana@tailspin.example", "Tailspin Toys", "Website", "won", "Dana Okafor", now.Add(-26 * time.Hour)},
		{"5", "<script>alert(1)</script>", "x@evil.example", "Evil & Co", "Website", "lost", "Sam Rivera", now.Add(-5 * 24 * time.Hour)},
		{"6", "Olu Adeyemi", "olu@litware.example", "Litware", "Typeform", "unqualified", "—", now.Add(-40 * 24 * time.Hour)},
	}
	series := func(n int, step time.Duration, base float64, spikeAt, spikeLen int) []components.ChartPoint {
		start := now.Truncate(step).Add(-time.Duration(n) * step)
		pts := make([]components.ChartPoint, n)
		for i := range pts {
			t := start.Add(time.Duration(i) * step)
			hour := float64(t.Hour()) + float64(t.Minute())/60
			daily := 0.35 + 0.65*math.Max(0, math.Sin((hour-6)/24*2*math.Pi))
			vol := int64(base*daily + rng.Float64()*base*0.25)
			rate := 0.012 + rng.Float64()*0.018
			if i >= spikeAt && i < spikeAt+spikeLen {
				rate = 0.07 + rng.Float64()*0.05
			}
			dups := int64(math.Round(float64(vol) * rate))
			r := 0.0
			if vol > 0 {
				r = float64(dups) / float64(vol)
			}
			pts[i] = components.ChartPoint{T: t, Volume: vol, Duplicates: dups, Rate: r}
		}
		return pts
	}
	day := series(288, 5*time.Minute, 120, 190, 14)
	week := series(168, time.Hour, 420, 120, 5)
	month := series(8640, 5*time.Minute, 40, 6000, 60)
	// a gap with no deliveries in the day chart
	for i := 40; i < 52; i++ {
		day[i].Volume, day[i].Duplicates, day[i].Rate = 0, 0, 0
	}
	zero := make([]components.ChartPoint, 24)
	for i := range zero {
		zero[i].T = now.Truncate(time.Hour).Add(time.Duration(i-24) * time.Hour)
	}
	var sources []sampleSource
	for i, name := range []string{"HubSpot forms", "Typeform", "Website", "Partner CSV"} {
		trend := make([]float64, 48)
		for j := range trend {
			trend[j] = 0.01 + rng.Float64()*0.02
			if i == 0 && j > 36 && j < 42 {
				trend[j] = 0.08
			}
		}
		if i == 3 {
			trend = nil
		}
		rate := 0.0
		if len(trend) > 0 {
			rate = trend[len(trend)-1]
		}
		sources = append(sources, sampleSource{Name: name, Kind: []string{"hubspot", "typeform", "generic", "generic"}[i], Rate: rate, Trend: trend, Alert: i == 0})
	}
	dayFrom := day[0].T
	return galleryData{
		Now:     now,
		Leads:   leads,
		Sources: sources,
		Day: components.ChartData{
			Title: "HubSpot forms — last 24 hours", Points: day, Threshold: 0.05, Step: 5 * time.Minute,
			From: dayFrom, To: dayFrom.Add(24 * time.Hour),
			Highlight: []components.TimeRange{{From: day[190].T, To: day[204].T, Label: "Duplicate-rate spike"}},
		},
		Week:  components.ChartData{Title: "Typeform — last 7 days", Points: week, Threshold: 0.05, Step: time.Hour},
		Month: components.ChartData{Title: "Website — last 30 days (8,640 five-minute buckets)", Points: month, Threshold: 0.05, Step: 5 * time.Minute},
		Zero:  components.ChartData{Title: "Partner CSV — all-zero volume", Points: zero, Step: time.Hour},
		None: components.ChartData{Title: "New source — no data", Step: time.Hour,
			From: now.Add(-24 * time.Hour), To: now},
	}
}

func percent(r float64) string { return strconv.FormatFloat(r*100, 'f', 1, 64) + "%" }
