package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRedisURL(t *testing.T) {
	cases := []struct {
		url  string
		want RedisTarget
	}{
		{"redis://127.0.0.1:6379/2", RedisTarget{Mode: RedisSingle, Addrs: []string{"127.0.0.1:6379"}, DB: 2}},
		{"redis://cache.internal", RedisTarget{Mode: RedisSingle, Addrs: []string{"cache.internal:6379"}}},
		{"redis://:s%40cret@10.0.0.5:6380", RedisTarget{Mode: RedisSingle, Addrs: []string{"10.0.0.5:6380"}, Password: "s@cret"}},
		{"redis://app:pw@[::1]:6379/0", RedisTarget{Mode: RedisSingle, Addrs: []string{"[::1]:6379"}, Username: "app", Password: "pw"}},
		{"rediss://:pw@redis.example.com:6380/1", RedisTarget{Mode: RedisSingle, Addrs: []string{"redis.example.com:6380"}, Password: "pw", DB: 1, TLS: true, TLSServerName: "redis.example.com"}},
		{"redis-sentinel://:pw@s1:26379,s2:26380,s3/3?master=leadpipe", RedisTarget{Mode: RedisSentinel, Addrs: []string{"s1:26379", "s2:26380", "s3:26379"}, Password: "pw", DB: 3, MasterName: "leadpipe"}},
		{"redis-sentinel://s1?master=m&sentinel_password=sp&tls=true", RedisTarget{Mode: RedisSentinel, Addrs: []string{"s1:26379"}, MasterName: "m", SentinelPassword: "sp", TLS: true, TLSServerName: "s1"}},
		{"redis-cluster://n1:7000,n2:7001,n3:7002", RedisTarget{Mode: RedisCluster, Addrs: []string{"n1:7000", "n2:7001", "n3:7002"}}},
		{"redis-cluster://:pw@n1:7000/0", RedisTarget{Mode: RedisCluster, Addrs: []string{"n1:7000"}, Password: "pw"}},
	}
	for _, c := range cases {
		got, err := ParseRedisURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.url, got, c.want)
		}
	}
}

func TestParseRedisURLRejects(t *testing.T) {
	bad := map[string]string{
		"127.0.0.1:6379":                           "want redis://",
		"http://x:1":                               "unknown scheme",
		"redis://":                                 "no host",
		"redis://a:1,b:2":                          "one host",
		"redis://a:99999":                          "bad port",
		"redis://a:1/x":                            "database number",
		"redis://a:1/16":                           "database number",
		"redis-sentinel://s1:26379":                "master=NAME",
		"redis-sentinel://s1,,s2?master=m":         "empty host",
		"redis-cluster://n1:7000/2":                "only database 0",
		"redis-cluster://n1:7000?master=m":         "unknown parameter",
		"redis://a:1?tls=true":                     "unknown parameter",
		"redis-sentinel://s1?master=m&tls=perhaps": "tls",
	}
	for u, want := range bad {
		_, err := ParseRedisURL(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", u, err, want)
		}
	}
}

func TestRedisURLOverridesAddr(t *testing.T) {
	c, err := Load(env(map[string]string{"LEADPIPE_REDIS_ADDR": "10.1.1.1:6379", "LEADPIPE_REDIS_DB": "4",
		"LEADPIPE_REDIS_URL": "redis-sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/2?master=lp"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.Mode != RedisSentinel || c.Redis.DB != 2 || c.Redis.MasterName != "lp" || len(c.Redis.Addrs) != 2 {
		t.Fatalf("target %+v", c.Redis)
	}
	if strings.Contains(c.Redis.String(), "pw") {
		t.Fatalf("String() shows the password: %s", c.Redis)
	}
	// Without the URL the target is the single server of _ADDR/_DB.
	c, err = Load(env(map[string]string{"LEADPIPE_REDIS_ADDR": "10.1.1.1:6379", "LEADPIPE_REDIS_DB": "4", "LEADPIPE_REDIS_PASSWORD": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (RedisTarget{Mode: RedisSingle, Addrs: []string{"10.1.1.1:6379"}, DB: 4, Password: "x"}); !reflect.DeepEqual(c.Redis, want) {
		t.Fatalf("target %+v", c.Redis)
	}
	// A bad URL is named, and its password not echoed.
	_, err = Load(env(map[string]string{"LEADPIPE_REDIS_URL": "redis-sentinel://:hunter2@s1"}))
	if err == nil || !strings.Contains(err.Error(), "LEADPIPE_REDIS_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}
