// Package pgcluster starts a private, throw-away PostgreSQL cluster from the server
// binaries installed on the machine (initdb, pg_ctl), listening only on a Unix socket
// in its own temporary directory. cuzk demo and the process-level tests use it.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Cluster is a running private cluster.
type Cluster struct {
	Dir    string // everything lives here: data, socket, log
	Port   int
	bin    string
	cred   *syscall.Credential
	data   string
	socket string
}

// FindBinDir locates the directory holding initdb and pg_ctl: $CUZK_PG_BINDIR, the
// newest /usr/lib/postgresql/*/bin, or $PATH.
func FindBinDir() (string, error) {
	if d := os.Getenv("CUZK_PG_BINDIR"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found: install the postgresql package or set CUZK_PG_BINDIR")
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start creates and starts a cluster in a new temporary directory. PostgreSQL refuses
// to run as root, so under root the server runs as the "postgres" user.
func Start(ctx context.Context, port int) (*Cluster, error) {
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cuzk-pg-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	c := &Cluster{Dir: dir, Port: port, bin: bin, data: filepath.Join(dir, "data"), socket: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs a 'postgres' user to run the server: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	if out, err := c.cmd(ctx, "initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		c.Remove()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if err := c.start(ctx); err != nil {
		c.Remove()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses='' -c fsync=off -c max_connections=200", c.Port, c.socket)
	out, err := c.cmd(ctx, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.Dir, "server.log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	return nil
}

// Restart stops the server (fast mode: connections are cut) and starts it again.
func (c *Cluster) Restart(ctx context.Context, down time.Duration) error {
	if err := c.Pause(ctx); err != nil {
		return err
	}
	time.Sleep(down)
	return c.Resume(ctx)
}

// Pause stops the server (fast mode: connections are cut) and keeps its data; Resume
// starts it again.
func (c *Cluster) Pause(ctx context.Context) error {
	if out, err := c.cmd(ctx, "pg_ctl", "-D", c.data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Resume starts a server that Pause stopped.
func (c *Cluster) Resume(ctx context.Context) error { return c.start(ctx) }

// URL is a pgx connection string for database db on the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", c.socket, c.Port, db)
}

// Stop shuts the server down and deletes the directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.cmd(ctx, "pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop").CombinedOutput()
	c.Remove()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Remove deletes the cluster's directory.
func (c *Cluster) Remove() { os.RemoveAll(c.Dir) }

func (c *Cluster) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// FreePort picks a port number for the cluster's socket name. With no TCP listener,
// it only has to be unused by other sockets in the same directory, which is ours.
func FreePort() int { return 5433 + os.Getpid()%1000 }
