package leads

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"leadpipe/internal/ids"

	"github.com/jmoiron/sqlx"
)

// SeedOptions tune Seed.
type SeedOptions struct {
	N        int    // leads to insert
	Batch    int    // rows per INSERT (default 2000; at most 2500: 25 placeholders a row, 65,535 a statement)
	Workers  int    // parallel inserters (default 2)
	SourceID string // "" makes manual leads
	RandSeed uint64 // same seed, same names
	// Progress, when set, is called after each batch with the total so far.
	Progress func(done int)
}

// Seed fills a tenant with n realistic-looking leads using multi-row
// INSERTs (cmd/seed and the list benchmark). Names, emails and companies
// come from small vocabularies so searches hit common and rare words;
// statuses follow a typical funnel.
func Seed(ctx context.Context, d *sqlx.DB, tenantID string, o SeedOptions) (int, error) {
	if o.Batch <= 0 {
		o.Batch = 2000
	}
	o.Batch = min(o.Batch, 2500)
	if o.Workers <= 0 {
		o.Workers = 2
	}
	var done atomic.Int64
	var next atomic.Int64 // rows handed out
	var wg sync.WaitGroup
	errs := make(chan error, o.Workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(o.RandSeed, uint64(w)+1))
			for ctx.Err() == nil {
				start := next.Add(int64(o.Batch)) - int64(o.Batch)
				if start >= int64(o.N) {
					return
				}
				k := min(o.Batch, o.N-int(start))
				if err := seedBatch(ctx, d, tenantID, o.SourceID, rng, int(start), k); err != nil {
					errs <- err
					cancel()
					return
				}
				total := done.Add(int64(k))
				if o.Progress != nil {
					o.Progress(int(total))
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return int(done.Load()), err
	}
	return int(done.Load()), nil
}

func seedBatch(ctx context.Context, d *sqlx.DB, tenantID, sourceID string, rng *rand.Rand, start, k int) error {
	rows := make([]leadRow, 0, k)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := 0; i < k; i++ {
		id := ids.New()
		first := seedFirst[rng.IntN(len(seedFirst))]
		last := seedLast[rng.IntN(len(seedLast))]
		company := seedCompany[rng.IntN(len(seedCompany))] + " " + seedSuffix[rng.IntN(len(seedSuffix))]
		domain := seedDomains[rng.IntN(len(seedDomains))]
		if rng.IntN(3) == 0 { // a third use their company's domain
			domain = strings.ToLower(strings.Fields(company)[0]) + ".example"
		}
		n := start + i
		email := fmt.Sprintf("%s.%s%d@%s", strings.ToLower(first), strings.ToLower(last), n%997, domain)
		name := first + " " + last
		phone := fmt.Sprintf("+1555%07d", n%10000000)
		payload, _ := json.Marshal(map[string]string{"email": email, "name": name, "phone": phone, "company": company})
		ref := id
		if sourceID != "" {
			ref = fmt.Sprintf("seed-%d", n)
		}
		rows = append(rows, leadRow{TenantID: tenantID, ID: id, SourceID: sourceID, SourceRef: ref, Payload: string(payload),
			Email: email, Name: name, Phone: phone, Company: company, LastSeenAt: now, TimesSeen: 1, Status: seedStatus(rng),
			CreatedAt: now, UpdatedAt: now})
	}
	return insertLeads(ctx, d, rows, "")
}

// seedStatus follows a typical funnel: most leads are new or contacted.
func seedStatus(rng *rand.Rand) string {
	switch p := rng.IntN(100); {
	case p < 40:
		return "new"
	case p < 60:
		return "contacted"
	case p < 75:
		return "qualified"
	case p < 85:
		return "unqualified"
	case p < 92:
		return "won"
	default:
		return "lost"
	}
}

var seedFirst = strings.Fields(`James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara
	Richard Susan Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy Matthew Betty Anthony Margaret
	Mark Sandra Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Carol Kevin Amanda Brian
	Dorothy George Melissa Timothy Deborah Ronald Stephanie Edward Rebecca Jason Sharon Jeffrey Laura Ryan Cynthia Jacob
	Kathleen Gary Amy Nicholas Angela Eric Shirley Jonathan Anna Stephen Brenda Larry Pamela Justin Emma Scott Nicole
	Brandon Helen Benjamin Samantha Samuel Katherine Gregory Christine Alexander Debra Frank Rachel Patrick Carolyn
	Raymond Janet Jack Catherine Dennis Maria Jerry Heather Tyler Diane Aaron Ruth Jose Julie Adam Olivia Nathan Joyce
	Henry Virginia Douglas Victoria Zachary Kelly Peter Lauren Kyle Christina Ethan Joan Walter Evelyn Noah Judith
	Jeremy Megan Christian Andrea Keith Cheryl Roger Hannah Terry Jacqueline Gerald Martha Harold Gloria Sean Teresa
	Austin Ann Carl Sara Arthur Madison Lawrence Frances Dylan Kathryn Jesse Janice Jordan Jean Bryan Abigail Billy
	Alice Joe Julia Bruce Judy Gabriel Sophia Logan Grace Albert Denise Willie Amber Alan Doris Juan Marilyn Wayne
	Danielle Elijah Beverly Randy Isabella Roy Theresa Vincent Diana Ralph Natalie Eugene Brittany Russell Charlotte
	Bobby Marie Mason Kayla Philip Alexis Louis Lori Zoë Renée José Søren Łukasz`)

var seedLast = strings.Fields(`Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez
	Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark
	Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall
	Rivera Campbell Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart
	Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox
	Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders
	Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes
	Gonzales Fisher Vasquez Simmons Romero Jordan Patterson Alexander Hamilton Graham Reynolds Griffin Wallace Moreno
	West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Marshall Owens Harrison
	Fernandez McDonald Woods Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson
	Simpson Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Muñoz Hunt Hicks Holmes Palmer Wagner Black
	Robertson Boyd Rose Stone Salazar Fox Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto
	Weaver Ryan Gardner Payne Grant Dunn Kelley Spencer Hawkins Arnold Pierce Hansen Peters Santos Hart Bradley Knight
	Elliott Cunningham Duncan Armstrong Hudson Carroll Lane Riley Andrews Ray Berry Perkins Hoffman Johnston Matthews
	Peña Richards Willis Carpenter Lawrence Sandoval Müller Østergaard Dubois`)

var seedCompany = strings.Fields(`Acme Globex Initech Umbrella Hooli Stark Wayne Wonka Tyrell Cyberdyne Soylent
	Aperture Vandelay Pied Oscorp Gringotts Monarch Dunder Sterling Prestige Massive Ollivanders Nakatomi Virtucon
	Genco Duff Krusty Blue Bluth Goliath Rekall Weyland Zorg Buy Vehement Spacely Cogswell Gekko Paper Rich Northwind
	Contoso Fabrikam Adventure Tailspin Litware Proseware Woodgrove Lucerne Margie Alpine Coho Wingtip Fourth Trey
	Wide Humongous Southridge Datum Graphic Consolidated Fusion Lamna Liberty Nod Quantum Orbit Nimbus Vertex Apex
	Summit Pinnacle Horizon Evergreen Redwood Silverline Ironclad Brightway Clearwater Stonebridge Riverbend Oakridge
	Maple Cedar Falcon Eagle Harbor Beacon Lighthouse Keystone Cornerstone Landmark Meridian Zenith Polaris Aurora
	Nova Stellar Lumen Prism Spectrum Vector Matrix Nexus Vortex Cascade Tidal Granite Cobalt Crimson Indigo Ember`)

var seedSuffix = strings.Fields(`Inc LLC Ltd GmbH Corp Group Labs Systems Partners Holdings`)

var seedDomains = strings.Fields(`gmail.com yahoo.com outlook.com hotmail.com icloud.com proton.me aol.com gmx.de
	web.de mail.com fastmail.com zoho.com yandex.ru live.com msn.com`)
