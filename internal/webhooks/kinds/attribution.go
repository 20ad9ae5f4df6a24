package kinds

// Attribution of ad senders (docs/SENDERS.md, "Attribution from ads"):
// which campaign, ad set, ad and form a lead came from, as each ad
// platform names them, in the touch keys every lead shares
// (docs/FORMS.md, "Attribution"). A record's touch is its own, so it is
// the lead's last touch and, on a lead without one yet, its first; the
// leads area sets its "at" (the record's time, as record order has it)
// and source_id, and merges it (leads.RecordTouches): the first touch is
// set once, the last follows the newest record.

// touchFrom picks key → value pairs of o into a touch: each touch key
// takes the first of its source members that has a value (ids sent as
// JSON numbers keep their digits). Nil when none has one.
func touchFrom(o object, keys [][2]string) *Touches {
	if o == nil {
		return nil
	}
	t := Touch{}
	for _, k := range keys {
		if t[k[0]] != "" {
			continue
		}
		if v := o.scalar(k[1]); v != "" {
			t[k[0]] = v // the leads area clips it
		}
	}
	if len(t) == 0 {
		return nil
	}
	return &Touches{Last: t}
}

// metaTouchKeys: a leadgen webhook change value carries ad_id, form_id
// and adgroup_id (the ad set's id under its older name); the Graph lead
// the enrichment fetches carries ad_id, adset_id, campaign_id,
// campaign_name and form_id when the access token may read ads.
// https://developers.facebook.com/docs/marketing-api/guides/lead-ads/retrieving
var metaTouchKeys = [][2]string{
	{"campaign_id", "campaign_id"}, {"campaign_name", "campaign_name"},
	{"adset_id", "adset_id"}, {"adset_id", "adgroup_id"},
	{"ad_id", "ad_id"}, {"form_id", "form_id"},
}

// googleAdsTouchKeys: the lead form webhook's campaign_id, gcl_id (the
// click id, gclid in a URL), adgroup_id (Google's ad set), creative_id
// (the ad) and form_id, ids as JSON numbers.
// https://developers.google.com/google-ads/webhook/docs/implementation
var googleAdsTouchKeys = [][2]string{
	{"campaign_id", "campaign_id"}, {"adset_id", "adgroup_id"}, {"ad_id", "creative_id"},
	{"form_id", "form_id"}, {"gclid", "gcl_id"},
}

// tiktokTouchKeys: the lead's campaign_id, adgroup_id (TikTok's ad
// group, the ad set), ad_id and page_id (the instant form), and the
// names where the lead carries them (docs/SENDERS.md, "TikTok").
var tiktokTouchKeys = [][2]string{
	{"campaign_id", "campaign_id"}, {"campaign_name", "campaign_name"},
	{"adset_id", "adgroup_id"}, {"ad_id", "ad_id"}, {"form_id", "page_id"}, {"form_id", "form_id"},
}

// metaTouch is a Meta record's touch: a webhook change value or a Graph
// lead object.
func metaTouch(doc object) *Touches { return touchFrom(doc, metaTouchKeys) }

// googleAdsTouch is a Google Ads lead form record's touch.
func googleAdsTouch(doc object) *Touches { return touchFrom(doc, googleAdsTouchKeys) }

// tiktokTouch is a TikTok lead's touch (the event's lead object).
func tiktokTouch(lead object) *Touches { return touchFrom(lead, tiktokTouchKeys) }
