// Package faults is Leadpipe's fault suite: the real server and worker
// binaries against a private MariaDB and a private Redis, a sender that
// retries every delivery and every Idempotency-Key POST until it gets a
// 2xx, and in turn: the worker killed and restarted, Redis stopped, the
// server's MySQL connections KILLed, MariaDB stopped for 10 s, the server
// kill -9'd. After each fault the invariants are checked over everything
// acknowledged so far:
//
//   - every acknowledged delivery is stored exactly once, and every answer
//     for it named the same stored delivery;
//   - leads = distinct natural keys (one lead per key);
//   - no human status is reset by a sender's update;
//   - one effect per Idempotency-Key (one lead, the same id in every answer);
//   - nothing is left `received` (or `failed`) after the settle time.
//
// TestWorkerKilledMidBatch kills the worker process while a batch
// transaction has written its leads and waits (at a gate the test holds)
// to mark its deliveries processed, and checks that after the restart
// every delivery was processed exactly once (attempts = 1, times_seen =
// deliveries + duplicates, one lead per natural key).
//
// Short (run by .ci/run):  go test -tags faults -count=1 ./internal/faults/
// Long (20,000 signed deliveries, three runs in a row):
//
//	LEADPIPE_FAULTS=long go test -tags faults -count=3 -timeout 60m -v ./internal/faults/
package faults
