// Command cuzk is a Groth16 proving worker backed by PostgreSQL, and the operator's
// tool around it: migrations, circuit setup, submitting and following requests,
// timing history, retries, verification, benchmarks and a self-contained demo.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	gnarklogger "github.com/consensys/gnark/logger"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"
)

// Exit codes are part of the contract with operators' scripts.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// usageError marks errors that are the caller's mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// globals are the flags every subcommand takes.
type globals struct {
	DatabaseURL string `name:"database-url" env:"DATABASE_URL" help:"PostgreSQL connection string (pgx syntax)."`
	LogFormat   string `name:"log-format" env:"CUZK_LOG_FORMAT" enum:"auto,text,json" default:"auto" help:"Log format: auto or text (text, coloured on a terminal unless NO_COLOR is set) or json (one object per line)."`
	LogLevel    string `name:"log-level" env:"CUZK_LOG_LEVEL" enum:"debug,info,warn,error" default:"info" help:"Minimum log level."`

	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

type cli struct {
	globals

	Migrate migrateCmd `cmd:"" help:"Create or upgrade the database schema (River's and cuzk's); safe to run concurrently."`
	Setup   setupCmd   `cmd:"" help:"Compile a circuit, run a development key ceremony (or import keys) and register it."`
	Inputs  inputsCmd  `cmd:"" help:"Print valid inputs JSON for a built-in circuit."`
	Worker  workerCmd  `cmd:"" help:"Claim proof requests and prove them until stopped."`
	Submit  submitCmd  `cmd:"" help:"Submit a proof request (idempotent on --request-id)."`
	Status  statusCmd  `cmd:"" help:"Show the state of proof requests."`
	Timings timingsCmd `cmd:"" help:"Per-circuit p50/p95 of each proving phase, from the attempt history."`
	Retry   retryCmd   `cmd:"" help:"Queue failed or cancelled requests again."`
	Cancel  cancelCmd  `cmd:"" help:"Cancel queued or running requests."`
	Verify  verifyCmd  `cmd:"" help:"Re-verify stored proofs from their SQL bytes with gnark's verifier."`
	Bench   benchCmd   `cmd:"" help:"Benchmark proving a circuit, optionally against gnark's prover."`
	Demo    demoCmd    `cmd:"" help:"Run everything end to end on a private, temporary PostgreSQL cluster."`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var c cli
	c.stdout, c.stderr = stdout, stderr
	parser, err := kong.New(&c,
		kong.Name("cuzk"),
		kong.Description("Groth16 proving worker backed by PostgreSQL."),
		kong.UsageOnError(),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
	)
	if err != nil {
		fmt.Fprintln(stderr, "cuzk:", err)
		return exitRuntime
	}
	code := exitOK
	func() {
		defer func() {
			if r := recover(); r != nil {
				ec, ok := r.(exitCode)
				if !ok {
					panic(r)
				}
				code = int(ec)
			}
		}()
		kctx, err := parser.Parse(args)
		if err != nil {
			fmt.Fprintln(stderr, "cuzk:", err)
			code = exitUsage
			return
		}
		c.log = newLogger(stderr, c.LogFormat, c.LogLevel)
		// Libraries that log through slog's default (or the log package) follow the format too.
		slog.SetDefault(c.log)
		gnarklogger.Disable() // gnark's own debug lines would bypass our log format
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		kctx.BindTo(ctx, (*context.Context)(nil))
		err = kctx.Run(&c.globals)
		var ue usageError
		var ee exitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			fmt.Fprintln(stderr, "cuzk:", oneLine(err))
			code = ee.code
		case errors.As(err, &ue):
			fmt.Fprintln(stderr, "cuzk:", oneLine(err))
			code = exitUsage
		default:
			fmt.Fprintln(stderr, "cuzk:", oneLine(err))
			code = exitRuntime
		}
	}()
	return code
}

type exitCode int

// exitError ends a command that did its job with a status other than 0, 1 or 2 (for
// example 3: a comparison found a regression) and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// newLogger logs to w: JSON lines for --log-format json; otherwise tint's text,
// coloured only when w is a terminal and NO_COLOR is unset (https://no-color.org).
func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		lvl = slog.LevelInfo // kong's enum has already refused anything else
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
	}
	return slog.New(tint.NewTextHandler(w, &tint.Options{
		Level:      lvl,
		TimeFormat: time.TimeOnly,
		NoColor:    !isTerminal(w) || os.Getenv("NO_COLOR") != "",
	}))
}

// isTerminal says whether w is a terminal (progress bars and colours are for people).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// connect opens a pool on --database-url / DATABASE_URL.
func (g *globals) connect(ctx context.Context) (*pgxpool.Pool, error) {
	return g.connectWith(ctx, nil, nil)
}

// workerLockTimeout is the worker sessions' lock_timeout unless the URL sets one: a row
// lock that another transaction keeps (a submitter's own, left open) costs a worker's
// statement this long at most, not a job slot or the leader's upkeep until it ends.
const workerLockTimeout = "5s"

// connectWith is connect with the session settings params added where the URL does
// not set them, and onNotice (if not nil) told of the server's notices and warnings.
func (g *globals) connectWith(ctx context.Context, params map[string]string, onNotice pgconn.NoticeHandler) (*pgxpool.Pool, error) {
	if g.DatabaseURL == "" {
		return nil, usagef("no database: set DATABASE_URL or --database-url")
	}
	cfg, err := pgxpool.ParseConfig(g.DatabaseURL)
	if err != nil {
		return nil, usagef("bad DATABASE_URL: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "cuzk"
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		// cuzk's queries are short, or bounded like the dashboard's; PostgreSQL's JIT,
		// triggered by cost estimates, compiles for 20-100 ms to save less than that.
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	for k, v := range params {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	cfg.ConnConfig.OnNotice = onNotice
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	const answerWithin = 15 * time.Second
	pctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, connectError(cfg.ConnConfig, answerWithin, err)
	}
	return pool, nil
}

// connectError turns pgx's connect error, a line per address and TLS try, into one
// line: where, what went wrong, and what to check. errors.Is and errors.As still see
// pgx's error.
func connectError(cc *pgx.ConnConfig, within time.Duration, err error) error {
	where := fmt.Sprintf("%s:%d", cc.Host, cc.Port)
	var pe *pgconn.PgError
	var dns *net.DNSError
	var msg string
	switch {
	case errors.As(err, &pe):
		check := map[string]string{
			"28P01": "check the password in DATABASE_URL (or PGPASSWORD, ~/.pgpass)",
			"28000": "check the user in DATABASE_URL and the server's pg_hba.conf",
			"3D000": "create the database (createdb, or cuzk demo for a private one) or fix its name in DATABASE_URL",
			"53300": "the server has no connection slot left: raise max_connections or close idle clients",
			"57P03": "the server is starting up or shutting down: try again shortly",
		}[pe.Code]
		if check == "" {
			check = "check DATABASE_URL"
		}
		msg = fmt.Sprintf("database at %s (user %q, database %q): %s (SQLSTATE %s): %s",
			where, cc.User, cc.Database, pe.Message, pe.Code, check)
	case errors.As(err, &dns):
		msg = fmt.Sprintf("database host %q not found (%s): check the host in DATABASE_URL", cc.Host, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		msg = fmt.Sprintf("database at %s: connection refused: is PostgreSQL running and listening there? check the host and port in DATABASE_URL", where)
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		msg = fmt.Sprintf("database at %s did not answer within %s: check the host and port in DATABASE_URL and any firewall between", where, within)
	default:
		msg = fmt.Sprintf("database at %s: %s", where, lastLine(err))
	}
	return &describedError{msg: msg, err: err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// lastLine is the most specific part of a multi-line error: pgx lists one line per
// try, the last being the plain (non-TLS) one that says most.
func lastLine(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// describedError is err with a message written for the operator.
type describedError struct {
	msg string
	err error
}

func (e *describedError) Error() string { return e.msg }
func (e *describedError) Unwrap() error { return e.err }

// connectWaiting is connect for long-running commands (the worker): while the
// database cannot be reached it logs each failed attempt and tries again, waiting 1 s
// and doubling up to 5 s, until it answers or ctx ends (SIGTERM: nil pool, nil error).
// A bad URL is a usage error at once; one-shot commands use connect and fail fast.
func (g *globals) connectWaiting(ctx context.Context) (*pgxpool.Pool, error) {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		pool, err := g.connectWith(ctx, map[string]string{"lock_timeout": workerLockTimeout}, nil)
		var ue usageError
		switch {
		case err == nil:
			if attempt > 1 {
				g.log.Info("database reachable", "attempts", attempt)
			}
			return pool, nil
		case errors.As(err, &ue):
			return nil, err
		case ctx.Err() != nil:
			return nil, nil
		}
		g.log.Warn("database unavailable, waiting", "attempt", attempt, "err", oneLine(err), "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}
