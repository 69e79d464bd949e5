export const MAIN_HELP = `qm — quartermaster: one API in front of many local model servers

Usage: qm <command> [options]

Commands:
  serve [-c FILE]          run the server (config: -c, else $QM_CONFIG, else ./quartermaster.toml)
  status [--url URL] [--json] [--watch]
                           models, queue and budget of a running server (--watch: live)
  load MODEL               load a model on a running server (waits until it is ready)
  unload [MODEL]           unload one model, or every model
  logs [MODEL] [-f]        a model's output lines (every model's without MODEL); -f follows
  config check [-c FILE]   validate a config file; errors as FILE:LINE:COL: message
  config schema            print the config file's JSON Schema (for editors)
  scan DIR [--ctx N]       read GGUF headers, print model entries with VRAM estimates
  doctor [-c FILE] [--json]
                           check this box and the config: programs, model files, ports,
                           state dir, GPU, API key; one line per check, with the fix
  import llama-swap FILE   print a quartermaster.toml for a llama-swap config.yaml
  keys hash | keys new NAME
                           the key_sha256 of a key on stdin; a new key and its [keys.NAME] table
  selftest [gpu] [--json]  run the GPU scenarios with demo models: simulated memory, or real
                           memory on an NVIDIA card (gpu); one verdict per check
  demo-upstream --port N --name X
                           a small OpenAI-compatible demo model server (see --help)
  demo-smi --dir DIR …     a stand-in for nvidia-smi over demo models' memory (see --help)
  version                  print qm's and Bun's versions

Every command takes --help. Exit codes: 0 ok, 1 runtime or validation error, 2 usage error.
`;

export const SERVE_HELP = `Usage: qm serve [-c FILE]

Runs the server on every address in server.listen, all sharing one scheduler.
  -c, --config FILE   config file (default: $QM_CONFIG, else ./quartermaster.toml)
Environment: QM_<SECTION>__<KEY>=value overrides scalar keys, e.g. QM_SERVER__START_PORT=20000.
Stop with Ctrl-C (SIGINT) or SIGTERM: in-flight requests get server.shutdown_timeout_s to
finish, then every model process is stopped. A second Ctrl-C stops at once.
SIGHUP (or saving the file, with server.watch_config) reloads the config without restarting
models whose process settings are unchanged; a config with errors changes nothing. A SIGHUP
that means the terminal went away (qm had one and has none now) stops qm as Ctrl-C does,
unless it was started with nohup.
A listener's port taken by anything else ends startup with exit 1, naming who holds it. When
stderr stops taking lines (a closed pipe or terminal), the log goes on in STATE_DIR/qm.log.
`;

export const STATUS_HELP = `Usage: qm status [--url URL] [--json] [--watch]

  --url URL    server to ask (default: $QM_URL, else the first server.listen of the config)
  -c FILE      config to read the default URL and API key from
  --json       print GET /api/status as JSON
  -w, --watch  redraw as it changes (from GET /api/events), until Ctrl-C
API key: $QM_API_KEY, else the first of server.api_keys in the config.
`;

export const LOAD_HELP = `Usage: qm load MODEL [--url URL]

Loads MODEL on a running server and waits until it is ready (evicting what its group policy
says). Options as for qm status.
`;

export const UNLOAD_HELP = `Usage: qm unload [MODEL] [--force] [--url URL]

Unloads MODEL (after its in-flight requests finish), or every model when none is named.
A leased model is refused (409, naming its leases) unless --force, which revokes them.
Options as for qm status.
`;

export const LOGS_HELP = `Usage: qm logs [MODEL] [-f] [--url URL]

Prints the output lines qm kept of MODEL's process (its last 500, stdout and stderr), or of
every model, each line prefixed with [ID], when none is named. -f, --follow: then prints each
new line as it comes, until Ctrl-C. Options as for qm status.
`;

export const CONFIG_HELP = `Usage: qm config check [-c FILE]
       qm config schema

check    Validates a config file without starting anything. Prints each problem as
         FILE:LINE:COL: KEY: message and exits 1 when there is one.
         -c, --config FILE   config file (default: $QM_CONFIG, else ./quartermaster.toml)
schema   Prints the JSON Schema of the config file (docs/quartermaster.schema.json), for
         editors: a first line \`#:schema ./docs/quartermaster.schema.json\` makes taplo
         (Even Better TOML) check and complete quartermaster.toml as you type.
`;

export const DOCTOR_HELP = `Usage: qm doctor [-c FILE] [--json]

Checks what qm needs on this box and prints one line per check: ✓ passed, ✗ failed (with
the fix), • a note (e.g. no GPU: qm then applies the static budget). Exits 1 when any
check failed.
  the config loads; each model's program is found and executable; each model's GGUF file
  (-m) is readable and its VRAM estimate fits the budget; the listeners' ports are free;
  the state dir is writable and its database (qm.db) opens; the GPU probe answers (and
  whether qm can trust it); an API key is set when qm listens beyond loopback.
  -c, --config FILE   config file (default: $QM_CONFIG, else ./quartermaster.toml)
  --json              {"ok": bool, "checks": [{"name", "ok", "detail", "fix"}]}
`;

export const SELFTEST_HELP = `Usage: qm selftest [gpu] [--json]

Runs the scenarios that matter for GPU memory, each with demo models (qm demo-upstream
--vram-mb N) holding known memory, and prints one verdict per check:
  probe         the probe reads the card
  pids          qm's model processes are found on it (or why not: then by change)
  co-residence  two models share the budget, a third evicts the least recently used
  foreign       another program's memory lowers the live ceiling and sheds an idle model
  estimate      each model's measured memory against what it holds (5 % + 300 MiB)
  spawn-guard   a start waits until an evicted model's memory shows up free
  by-change     with the probe's pids out of reach (a container), memory is attributed by
                change and the ceiling follows real use within one reading
  placement     two cards or more: each model's memory is on the card it was placed on
Without gpu the memory is simulated (qm demo-smi stands in for nvidia-smi): it runs on any box.
With gpu it is real, held through the NVIDIA driver (libcuda.so.1) and read with the real
probe; without the driver only the driver check runs, and fails.
  --json   {"ok": bool, "checks": [{"name", "ok", "detail"}]}
Exit 0 only when every check passed.
`;

export const KEYS_HELP = `Usage: qm keys hash | qm keys new NAME

  hash       reads a key from stdin (one trailing newline ignored) and prints its SHA-256 in
             lower-case hex, for key_sha256 in a [keys.NAME] table
  new NAME   prints a new random key on the first line, then its [keys.NAME] table with
             key_sha256: give the key to its user, put the table in the config (which then
             holds no secret)
`;

export const IMPORT_HELP = `Usage: qm import llama-swap FILE

Reads a llama-swap config.yaml and prints the quartermaster.toml that does the same on
stdout: models (cmd, cmdStop, proxy, ttl, aliases, env, checkEndpoint, concurrencyLimit,
useModelName, filters), groups, matrix, macros, hooks.on_startup.preload and peers. A
setting qm has no equivalent for is written as a comment saying so. Check the result with
'qm config check -c FILE'.
`;

export const VERSION_HELP = `Usage: qm version

Prints qm's version, the commit and date it was built from, and the Bun version it runs on:
  qm 0.1.0 (commit 1a2b3c4, built 2026-12-04; bun 1.4.5)
The commit and date are "unknown" when qm runs from source or was built outside git.
`;
