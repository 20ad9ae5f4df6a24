package web_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"leadpipe/internal/events"
	"leadpipe/internal/web"
)

// yamlToJSON turns a YAML document into the generic JSON value the schema
// compiler takes (merge keys and anchors resolved by the YAML library).
func yamlToJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("yaml → json: %v", err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAsyncAPIDocumentsEveryEvent: every event type the code emits has a
// channel and a message in asyncapi.yaml, every example validates against
// the message's payload schema (whose data schemas are the OpenAPI lead
// and alert), and an envelope the outbox really wrote validates too.
func TestAsyncAPIDocumentsEveryEvent(t *testing.T) {
	var doc struct {
		AsyncAPI string `yaml:"asyncapi"`
		Channels map[string]struct {
			Address  string                       `yaml:"address"`
			Messages map[string]map[string]string `yaml:"messages"`
		} `yaml:"channels"`
		Components struct {
			Messages map[string]struct {
				Name     string `yaml:"name"`
				Examples []struct {
					Payload any `yaml:"payload"`
				} `yaml:"examples"`
			} `yaml:"messages"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(web.AsyncAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AsyncAPI != "3.0.0" {
		t.Fatalf("asyncapi: %q, want 3.0.0", doc.AsyncAPI)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("file:///api/asyncapi.yaml", yamlToJSON(t, web.AsyncAPISpec)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("file:///api/openapi.yaml", yamlToJSON(t, web.OpenAPISpec)); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, typ := range events.Types {
		var msgKey string
		for _, ch := range doc.Channels {
			if ch.Address != typ {
				continue
			}
			for _, m := range ch.Messages {
				msgKey = strings.TrimPrefix(m["$ref"], "#/components/messages/")
			}
		}
		msg, ok := doc.Components.Messages[msgKey]
		if msgKey == "" || !ok || msg.Name != typ {
			t.Errorf("event type %s has no channel with a message in asyncapi.yaml", typ)
			continue
		}
		sch, err := c.Compile("file:///api/asyncapi.yaml#/components/messages/" + msgKey + "/payload")
		if err != nil {
			t.Fatalf("compile %s: %v", msgKey, err)
		}
		schemas[typ] = sch
		if len(msg.Examples) == 0 {
			t.Errorf("%s has no example", typ)
		}
		for i, ex := range msg.Examples {
			j, _ := json.Marshal(ex.Payload)
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
			if err := sch.Validate(v); err != nil {
				t.Errorf("example %d of %s does not validate: %v", i, typ, err)
			}
		}
		// A wrong type in the envelope must not validate (the schema bites).
		bad := map[string]any{"id": "x", "type": typ, "created_at": "2026-12-01T00:00:00Z", "sequence": 0, "data": map[string]any{}}
		if err := sch.Validate(bad); err == nil {
			t.Errorf("%s: an envelope with sequence 0 and an empty lead validated", typ)
		}
	}

	// A real envelope from the outbox, for a real lead from the API.
	e := uiEnv(t, "web_asyncapi")
	a := e.Tenant("acme")
	res := e.Do("POST", "/api/v1/leads", a.Token, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"}, "Idempotency-Key", "k1")
	if res.Status != 201 {
		t.Fatalf("create lead: %d %s", res.Status, res.Body)
	}
	var lead map[string]any
	res.JSON(t, &lead)
	evID := emitEvent(t, e, a.ID, events.LeadCreated)
	_ = evID
	var body []byte
	id, _ := lead["id"].(string)
	emitWith(t, e, a.ID, events.LeadStatusChanged, id, json.RawMessage(res.Body))
	if err := e.App.DB.Get(&body, `SELECT body FROM events WHERE tenant_id = ? AND resource_id = ? AND type = ?`, a.ID, id, events.LeadStatusChanged); err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas[events.LeadStatusChanged].Validate(v); err != nil {
		t.Fatalf("a real envelope does not validate: %v\n%s", err, body)
	}

	// Served without authentication.
	res = e.Do("GET", "/api/asyncapi.yaml", "", nil)
	if res.Status != 200 || res.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(res.Body, web.AsyncAPISpec) {
		t.Fatalf("GET /api/asyncapi.yaml: %d %q", res.Status, res.Header.Get("Content-Type"))
	}
}
