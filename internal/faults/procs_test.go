//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/redistest"
)

// proc is one child process we started, ended by its PID.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	log  string

	mu  sync.Mutex
	cmd *exec.Cmd
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n===== start %s at %s =====\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", p.name, err)
	}
	f.Close()
	p.cmd = cmd
}

// signal sends sig to the process and waits for it to exit (SIGKILL after
// 30 s if it has not).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	redistest.Signal(p.cmd, sig, 30*time.Second)
	p.cmd = nil
}

func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int { return redistest.FreePort(t, false) }

// buildBinaries compiles cmd/server and cmd/worker once per test binary.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TestMain removes the built binaries when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func binaries(t *testing.T) (server, worker string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "lp-faults-bin-")
		if buildErr != nil {
			return
		}
		root, err := filepath.Abs("../..")
		if err != nil {
			buildErr = err
			return
		}
		for _, c := range []string{"server", "worker"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, c), "./cmd/"+c)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/%s: %v\n%s", c, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "server"), filepath.Join(buildDir, "worker")
}

// mariaDB is a private mariadbd: its own datadir, socket and port, never
// the shared server on 3306.
type mariaDB struct {
	proc
	port int
	dir  string
}

func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	mariadbd, installDB := mariadbTools(t)
	dir := mysqlDir(t, "lp-faults-mariadb-")
	tmp, env := mysqlTmp(t, dir)
	runAs := runAsMySQL()
	if err := installDataDir(installDB, dir, env, runAs); err != nil {
		t.Fatal(err)
	}
	chownToMySQL(dir)
	m := &mariaDB{port: freePort(t), dir: dir}
	m.name, m.bin, m.log = "mariadbd", mariadbd, filepath.Join(dir, "stdout.log")
	m.args = append(mariadbdArgs(dir, tmp, m.port), append([]string{"--skip-log-bin"}, runAs...)...)
	m.env = env
	t.Cleanup(func() { m.signal(syscall.SIGKILL) })
	m.startAndWait(t)
	return m
}

// mariadbTools finds mariadbd and mariadb-install-db or skips the test.
func mariadbTools(t *testing.T) (mariadbd, installDB string) {
	t.Helper()
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		mariadbd = "/usr/sbin/mariadbd"
	}
	if _, err := os.Stat(mariadbd); err != nil {
		t.Skip("mariadbd not installed")
	}
	if installDB, err = exec.LookPath("mariadb-install-db"); err != nil {
		t.Skip("mariadb-install-db not installed")
	}
	return mariadbd, installDB
}

// mysqlDir makes a directory for data directories, removed when the test
// ends. mariadbd drops to the mysql user when started as root: its datadir
// must be reachable by that user, so it lives in /tmp (mode 755), not in
// the test's 0700 temp dir.
func mysqlDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mysqlTmp makes dir/tmp, a temporary directory the mysql user reaches
// (not $TMPDIR), and the environment naming it.
func mysqlTmp(t *testing.T, dir string) (tmp string, env []string) {
	t.Helper()
	tmp = filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	return tmp, append(os.Environ(), "TMPDIR="+tmp)
}

// runAsMySQL is mariadbd's --user when the tests run as root.
func runAsMySQL() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=mysql"}
	}
	return []string{}
}

// installDataDir installs a data directory in dir/data.
func installDataDir(installDB, dir string, env, runAs []string) error {
	install := exec.Command(installDB, append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db"}, runAs...)...)
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db %s: %v\n%s", dir, err, out)
	}
	return nil
}

// chownToMySQL gives everything under root to the mysql user when the
// tests run as root.
func chownToMySQL(root string) {
	if os.Geteuid() != 0 {
		return
	}
	if u, err := user.Lookup("mysql"); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		_ = filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, gid) })
	}
}

// mariadbdArgs are the arguments of a private mariadbd in dir on port.
func mariadbdArgs(dir, tmp string, port int) []string {
	return []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + filepath.Join(dir, "error.log"), "--innodb-buffer-pool-size=128M",
		"--max-connections=500", "--skip-name-resolve", "--tmpdir=" + tmp}
}

func (m *mariaDB) startAndWait(t *testing.T) {
	t.Helper()
	m.start(t)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		d, err := sqlx.Open("mysql", m.dsn(""))
		if err == nil {
			err = d.Ping()
			d.Close()
		}
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
	t.Fatalf("private MariaDB on %d did not come up:\n%s", m.port, b)
}

func (m *mariaDB) dsn(dbName string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?parseTime=true&loc=UTC", m.port, dbName)
}

// stopFor shuts the server down cleanly, keeps it down for d, and starts
// it again.
func (m *mariaDB) stopFor(t *testing.T, d time.Duration) {
	t.Helper()
	m.signal(syscall.SIGTERM)
	time.Sleep(d)
	m.startAndWait(t)
}

// killConnections KILLs every client connection but the caller's own (the
// server's and the worker's pools and the claimer's connections).
func (m *mariaDB) killConnections(t *testing.T) int {
	t.Helper()
	d, err := db.Open(context.Background(), m.dsn("mysql"))
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	defer d.Close()
	var ids []int64
	if err := d.Select(&ids, `SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon' AND USER = 'root'`); err != nil {
		t.Fatalf("processlist: %v", err)
	}
	n := 0
	for _, id := range ids {
		if _, err := d.Exec(fmt.Sprintf("KILL %d", id)); err == nil {
			n++
		}
	}
	return n
}

// leadpipe is the server (LEADPIPE_WORKER=off) or the worker process.
func newLeadpipe(t *testing.T, name, bin string, env map[string]string, dir string) *proc {
	p := &proc{name: name, bin: bin, log: filepath.Join(dir, name+".log")}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	p.env = append(p.env, "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"), "TMPDIR="+os.TempDir())
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	return p
}

func waitReady(t *testing.T, base string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s/readyz not 200 within %s", base, timeout)
}

func waitPort(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not listening within %s", addr, timeout)
}
