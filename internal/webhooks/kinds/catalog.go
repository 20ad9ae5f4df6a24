package kinds

import (
	"encoding/json"
	"time"
)

// CatalogEntry is one way to connect a sender (GET /api/v1/source-kinds,
// the "Add a source" page; docs/SENDERS.md has the same steps).
type CatalogEntry struct {
	Kind   string `json:"kind"`
	Preset string `json:"preset,omitempty"` // a named setup of token or generic
	Name   string `json:"name"`
	Vendor string `json:"vendor"`
	// Signs: the sender signs each request; false for senders that send a
	// shared secret as is (token presets).
	Signs bool `json:"signs"`
	// SecretFrom: "leadpipe" (paste Leadpipe's secret into the vendor) or
	// "vendor" (the vendor issues it: paste it into Leadpipe).
	SecretFrom string `json:"secret_from"`
	// SecretURL: the sender can set no header; it posts to the source's
	// secret webhook URL.
	SecretURL bool            `json:"secret_url,omitempty"`
	Config    json.RawMessage `json:"config,omitempty"` // the source config the preset creates
	Setup     []string        `json:"setup"`
	Sample    json.RawMessage `json:"sample"`
	// ContentType of the sample as the vendor sends it.
	ContentType string `json:"content_type"`
	// Docs is the vendor's own page on its webhooks.
	Docs string `json:"docs,omitempty"`
}

// SampleLead is the person every catalog sample carries.
var SampleLead = Lead{Email: "jane.doe@example.com", Name: "Jane Doe", Phone: "+1 555 0100", Company: "Acme Corp"}

var catalogTime = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// Catalog lists every kind and every named preset, in the order the "Add a
// source" page shows them.
func Catalog() []CatalogEntry {
	sample := func(kind string) json.RawMessage {
		return SampleBody(kind, "evt_01JCATALOG0001", "lead_01JCATALOG0001", SampleLead, catalogTime)
	}
	flat := json.RawMessage(`{"email":"jane.doe@example.com","name":"Jane Doe","phone":"+1 555 0100","company":"Acme Corp"}`)
	js, form := "application/json", "application/x-www-form-urlencoded"
	tokenSteps := func(where string, more ...string) []string {
		return append([]string{
			"Create the source here; copy its webhook URL and its secret.",
			where,
			`Send the secret in a header: "Authorization: Bearer <secret>" (or Basic auth with the secret as the password). Never put it in the URL's query string.`,
		}, more...)
	}
	urlSteps := func(where string, more ...string) []string {
		return append([]string{
			"Create the source here; copy its secret webhook URL (it ends with a long random part: keep it private).",
			where,
		}, more...)
	}
	preset := func(p string) json.RawMessage { return json.RawMessage(`{"preset":"` + p + `"}`) }
	return []CatalogEntry{
		{Kind: LinkedIn, Name: "LinkedIn Lead Gen Forms", Vendor: "LinkedIn", Signs: true, SecretFrom: "vendor", ContentType: js,
			Docs: "https://learn.microsoft.com/en-us/linkedin/shared/api-guide/webhook-validation",
			Setup: []string{
				"In the LinkedIn Developer Portal, open your app's Auth tab and copy its Client Secret; paste it here as the source's secret.",
				"Create a lead notification subscription (Lead Sync API, leadNotifications) with this source's webhook URL as its webhook.",
				"LinkedIn validates the URL with GET ?challengeCode=… and again every 2 hours; Leadpipe answers it with the client secret.",
				"Optional: give the source an access token (reconcile settings) so lead details are fetched from the lead form responses API.",
			}, Sample: sample(LinkedIn)},
		{Kind: Meta, Name: "Facebook and Instagram Lead Ads", Vendor: "Meta", Signs: true, SecretFrom: "vendor", ContentType: js,
			Setup: []string{
				"In Meta for Developers, open your app's Settings › Basic and copy the App Secret; paste it here as the source's secret, and choose a verify token.",
				"Under Webhooks, subscribe the Page object's leadgen field with this source's webhook URL as Callback URL and the verify token.",
				"Optional: add a Page access token (reconcile settings) so lead fields are fetched from the Graph API.",
			}, Sample: sample(Meta)},
		{Kind: GoogleAds, Name: "Google Ads lead forms", Vendor: "Google", Signs: false, SecretFrom: "leadpipe", ContentType: js,
			Setup: []string{
				"In Google Ads, open the lead form asset › Lead delivery option › Webhook integration.",
				"Paste this source's webhook URL as Webhook URL and its secret as Key, then Send test data.",
			}, Sample: sample(GoogleAds)},
		{Kind: HubSpot, Name: "HubSpot", Vendor: "HubSpot", Signs: true, SecretFrom: "vendor", ContentType: js,
			Docs: "https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation",
			Setup: []string{
				"In your HubSpot developer account, open the app › Auth and copy the Client secret; paste it here as the source's secret.",
				"Under Webhooks, set Target URL to this source's webhook URL and subscribe to contact.creation and contact.propertyChange (email, firstname, lastname, phone, company).",
				"HubSpot signs the URL it calls: Leadpipe must know its public address (LEADPIPE_BASE_URL) when it runs behind a proxy.",
			}, Sample: sample(HubSpot)},
		{Kind: Webflow, Name: "Webflow forms (app webhooks)", Vendor: "Webflow", Signs: true, SecretFrom: "vendor", ContentType: js,
			Docs: "https://developers.webflow.com/data/docs/working-with-webhooks",
			Setup: []string{
				"Create the webhook with your Webflow OAuth app (triggerType form_submission) and this source's webhook URL.",
				"Paste the app's client secret here as the source's secret: Webflow signs app webhooks with it.",
			}, Sample: sample(Webflow)},
		{Kind: Token, Preset: "webflow-dashboard", Name: "Webflow forms (site dashboard)", Vendor: "Webflow", Signs: false, SecretFrom: "leadpipe",
			SecretURL: true, Config: json.RawMessage(`{"preset":"webflow-dashboard","delivery_id_path":"$.payload.id","natural_key_path":"$.payload.id"}`), ContentType: js,
			Docs:   "https://developers.webflow.com/data/docs/working-with-webhooks",
			Setup:  urlSteps("In Webflow, open Site settings › Apps & integrations › Webhooks › Add webhook, choose Form submission and paste the secret webhook URL (dashboard webhooks are not signed)."),
			Sample: sample(Webflow)},
		{Kind: Tally, Name: "Tally", Vendor: "Tally", Signs: true, SecretFrom: "leadpipe", ContentType: js,
			Docs: "https://tally.so/help/webhooks",
			Setup: []string{
				"In Tally, open the published form › Integrations › Webhooks › Connect.",
				"Paste this source's webhook URL as Endpoint URL, turn on Signing secret and paste this source's secret.",
			}, Sample: sample(Tally)},
		{Kind: TikTok, Name: "TikTok Lead Generation", Vendor: "TikTok", Signs: true, SecretFrom: "vendor", ContentType: js,
			Docs: "https://developers.tiktok.com/doc/webhooks-verification",
			Setup: []string{
				"In TikTok for Developers, open your app and copy its Client secret; paste it here as the source's secret.",
				"Set the app's webhook Callback URL to this source's webhook URL and subscribe to lead events.",
			}, Sample: sample(TikTok)},
		{Kind: Typeform, Name: "Typeform", Vendor: "Typeform", Signs: true, SecretFrom: "leadpipe", ContentType: js,
			Setup: []string{
				"In Typeform, open the form › Connect › Webhooks › Add a webhook and paste this source's webhook URL.",
				"Open the webhook's Edit › Secret and paste this source's secret.",
			}, Sample: sample(Typeform)},
		{Kind: Standard, Name: "Standard Webhooks sender", Vendor: "Standard Webhooks (Svix and others)", Signs: true, SecretFrom: "leadpipe", ContentType: js,
			Docs: "https://www.standardwebhooks.com/",
			Setup: []string{
				"In the sender's webhook settings, add an endpoint with this source's webhook URL.",
				"Give it this source's secret (whsec_…), or paste the sender's signing secret here.",
			}, Sample: sample(Standard)},
		{Kind: Timestamped, Name: "Stripe-style signatures (Stripe, Calendly)", Vendor: "Stripe, Calendly", Signs: true, SecretFrom: "vendor", ContentType: js,
			Docs: "https://docs.stripe.com/webhooks#verify-events",
			Setup: []string{
				"Add a webhook endpoint in the sender with this source's webhook URL.",
				"Copy the endpoint's signing secret (whsec_…) and paste it here as the source's secret.",
			}, Sample: sample(Timestamped)},
		{Kind: Generic, Name: "Any HMAC-signed sender", Vendor: "Custom", Signs: true, SecretFrom: "leadpipe", Config: SampleConfig(Generic), ContentType: js,
			Setup: []string{
				"Configure the header, encoding and JSON paths of your sender in the source's config.",
				"The sender signs the raw body with HMAC-SHA256 and this source's secret.",
			}, Sample: sample(Generic)},
		{Kind: Token, Preset: "zapier", Name: "Zapier", Vendor: "Zapier", SecretFrom: "leadpipe", Config: preset("zapier"), ContentType: js,
			Setup:  tokenSteps("In your Zap, add the action Webhooks by Zapier › POST; set URL to the webhook URL and Payload Type to json; map email, name, phone and company as Data.", `Under Headers add "Authorization" with the value "Bearer <secret>".`),
			Sample: flat},
		{Kind: Token, Preset: "make", Name: "Make", Vendor: "Make", SecretFrom: "leadpipe", Config: preset("make"), ContentType: js,
			Setup:  tokenSteps("In your scenario, add HTTP › Make a request: URL = the webhook URL, Method = POST, Body type = Raw, Content type = JSON.", `Add a header "Authorization" = "Bearer <secret>".`),
			Sample: flat},
		{Kind: Token, Preset: "n8n", Name: "n8n", Vendor: "n8n", SecretFrom: "leadpipe", Config: preset("n8n"), ContentType: js,
			Setup:  tokenSteps("Add an HTTP Request node: Method POST, URL = the webhook URL, Send Body as JSON.", `Authentication: Generic Credential Type › Header Auth with Name "Authorization" and Value "Bearer <secret>".`),
			Sample: flat},
		{Kind: Token, Preset: "pipedream", Name: "Pipedream", Vendor: "Pipedream", SecretFrom: "leadpipe", Config: preset("pipedream"), ContentType: js,
			Setup:  tokenSteps("Add the HTTP / Webhook › Send POST Request action with the webhook URL and a JSON body.", `Add the header "Authorization: Bearer <secret>".`),
			Sample: flat},
		{Kind: Token, Preset: "unbounce", Name: "Unbounce", Vendor: "Unbounce", SecretFrom: "leadpipe", SecretURL: true, Config: preset("unbounce"), ContentType: form,
			Setup:  urlSteps("In Unbounce, open the page › Integrations › Webhooks › Add webhook and paste the secret webhook URL (Unbounce posts form-encoded fields and its data.json; Leadpipe unpacks them)."),
			Sample: json.RawMessage(`{"page_id":"a1b2c3","page_name":"Spring offer","data.json":{"email":["jane.doe@example.com"],"name":["Jane Doe"],"phone_number":["+1 555 0100"],"company_name":["Acme Corp"]}}`)},
		{Kind: Token, Preset: "gravity-forms", Name: "Gravity Forms", Vendor: "Gravity Forms", SecretFrom: "leadpipe", Config: preset("gravity-forms"), ContentType: js,
			Setup:  tokenSteps("In WordPress, open the form › Settings › Webhooks › Add New: Request URL = the webhook URL, Method POST, Format JSON, Request Body: Select Fields (email, name, phone, company).", `Under Request Headers add "Authorization" = "Bearer <secret>".`),
			Sample: flat},
		{Kind: Token, Preset: "contact-form-7", Name: "Contact Form 7", Vendor: "Contact Form 7", SecretFrom: "leadpipe", Config: preset("contact-form-7"), ContentType: form,
			Setup:  tokenSteps("Contact Form 7 has no webhooks of its own: with a webhook add-on (for example \"CF7 to Webhook\"), set the webhook URL in the form's Webhook tab.", `Add the header "Authorization: Bearer <secret>" in the add-on's header settings; form-encoded fields such as your-email and your-name are mapped by name.`),
			Sample: json.RawMessage(`{"your-name":"Jane Doe","your-email":"jane.doe@example.com","your-phone":"+1 555 0100","your-company":"Acme Corp"}`)},
		{Kind: Token, Preset: "jotform", Name: "Jotform", Vendor: "Jotform", SecretFrom: "leadpipe", SecretURL: true, Config: preset("jotform"), ContentType: "multipart/form-data",
			Setup:  urlSteps("In Jotform, open the form › Settings › Integrations › WebHooks and paste the secret webhook URL (Jotform posts multipart fields; name the fields email, name, phone and company, or set fields paths in the config)."),
			Sample: json.RawMessage(`{"formID":"241234567890","submissionID":"5912345678901234567","email":"jane.doe@example.com","name":"Jane Doe","phone":"+1 555 0100","company":"Acme Corp"}`)},
	}
}

// CatalogEntryFor finds a kind's entry, or a preset's when preset is set.
func CatalogEntryFor(kind, preset string) (CatalogEntry, bool) {
	for _, e := range Catalog() {
		if e.Kind == kind && e.Preset == preset {
			return e, true
		}
	}
	return CatalogEntry{}, false
}
