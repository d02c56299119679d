/**
 * A real OpenStack compute API for the openstack node provider's tests: Nova (API, conductor,
 * scheduler, and a compute service with the fake virtualization driver), Placement, Glance and
 * Neutron from Debian's packages, on MariaDB and RabbitMQ, with the Keystone of ./keystone.ts.
 * Everything listens on 127.0.0.1; each daemon is started directly (no systemd) in a process group
 * of its own and stopped by it. The fake driver boots nothing: `bootServersAsMachines` plays the
 * hypervisor, starting a simulated machine (src/localcluster/machines) with each ACTIVE server's
 * user data, so a server joins the cluster the way a real virtual machine would.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { freePort, type MachineHost } from "../../src/localcluster/index.js";
import { type DebianInstall, ensureDebianPackages } from "./debian.js";
import { KEYSTONE_INSTALL, type RunningKeystone, startKeystone } from "./keystone.js";

const run = promisify(execFile);
const DIST = "/usr/lib/python3/dist-packages";
/** OpenStack's daemons need Debian's own interpreter (another python3 may come first on PATH). */
const PYTHON = "/usr/bin/python3";

export const OPENSTACK_INSTALL: DebianInstall = {
  label: "openstack",
  packages: [
    ...KEYSTONE_INSTALL.packages,
    "mariadb-server",
    "python3-pymysql",
    "rabbitmq-server",
    "placement-api",
    "glance-api",
    "neutron-server",
    "nova-api",
    "nova-conductor",
    "nova-scheduler",
  ],
  provides: [
    ...KEYSTONE_INSTALL.provides,
    "/usr/sbin/mariadbd",
    "/usr/lib/rabbitmq/bin/rabbitmq-server",
    "/usr/bin/placement-api",
    "/usr/bin/glance-api",
    "/usr/bin/neutron-server",
    "/usr/bin/nova-api",
    "/usr/bin/nova-conductor",
    "/usr/bin/nova-scheduler",
    `${DIST}/nova/virt/fake.py`,
  ],
  // The packages would otherwise offer to create databases, users and endpoints themselves.
  preseed: [
    "nova-common nova/configure_db boolean false",
    "nova-api novaapi/configure_db boolean false",
    "glance-common glance/configure_db boolean false",
    "neutron-common neutron/configure_db boolean false",
    "placement-common placement/configure_db boolean false",
  ],
  noDaemons: true,
  expect: "about 360 packages, 2 to 4 minutes",
};

/** Installs the OpenStack services from Debian's packages unless they are there. */
export function ensureOpenStackInstalled(): Promise<void> {
  return ensureDebianPackages(OPENSTACK_INSTALL);
}

/** The flavors the test cloud offers: the embedded default's, so simulated machines can stand for its servers. */
export const OPENSTACK_FLAVORS = [
  { name: "m1.small", vcpus: 1, ram: 2048, disk: 20 },
  { name: "m1.medium", vcpus: 2, ram: 4096, disk: 40 },
  { name: "m1.large", vcpus: 4, ram: 8192, disk: 80 },
] as const;

/** What tests need of a running OpenStack; plain data, so the test runner can hand it to test files. */
export interface OpenStackInfo {
  /** Keystone's v3 endpoint. */
  authUrl: string;
  /** The cloud admin (role admin on project admin). */
  admin: { username: string; password: string; project: string };
  /** The user tenantry's servers belong to (role member in its project). */
  user: { username: string; password: string; projectName: string };
  /** The compute API (`…/v2.1`). */
  computeUrl: string;
  /** A 1 KiB raw image (Nova looks every imageRef up in Glance). */
  imageId: string;
  imageName: string;
  logDir: string;
  /** Seconds from the start to the end of each step, for the report. */
  timings: Record<string, number>;
}

export interface OpenStackClient extends OpenStackInfo {
  /** An admin call to the compute API (microversion 2.79: user data and flavors are shown). */
  computeAdmin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
  /** An admin call to any URL of the cloud, JSON or raw bytes. */
  adminCall<T = Record<string, unknown>>(
    url: string,
    method: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<T>;
}

export interface RunningOpenStack extends OpenStackClient {
  stop(): Promise<void>;
}

/** Calls to a running OpenStack as its admin, with a token kept for half an hour. */
export function openStackClient(info: OpenStackInfo): OpenStackClient {
  let adminToken: { value: string; until: number } | undefined;
  const token = async () => {
    if (adminToken && adminToken.until > Date.now()) return adminToken.value;
    const response = await fetch(`${info.authUrl}/auth/tokens?nocatalog`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["password"],
            password: {
              user: { name: info.admin.username, domain: { name: "Default" }, password: info.admin.password },
            },
          },
          scope: { project: { name: info.admin.project, domain: { name: "Default" } } },
        },
      }),
    });
    const value = response.headers.get("x-subject-token");
    if (!response.ok || !value) throw new Error(`admin login failed: ${response.status}`);
    adminToken = { value, until: Date.now() + 30 * 60_000 };
    return value;
  };
  const adminCall = async <T>(
    url: string,
    method: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> => {
    const raw = body instanceof Uint8Array;
    const response = await fetch(url, {
      method,
      headers: {
        "X-Auth-Token": await token(),
        Accept: "application/json",
        ...(body !== undefined && !raw ? { "Content-Type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: raw ? body : JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : {}) as T;
  };
  return {
    ...info,
    adminCall,
    computeAdmin: <T>(method: string, path: string, body?: unknown) =>
      adminCall<T>(`${info.computeUrl}${path}`, method, body, { "OpenStack-API-Version": "compute 2.79" }),
  };
}

// --- processes ------------------------------------------------------------------------------------

const groups = new Set<number>();
let exitHook = false;

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

function groupAlive(pgid: number): boolean {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z") return true;
    } catch {
      // Gone while we looked.
    }
  }
  return false;
}

async function stopGroup(pgid: number): Promise<void> {
  killGroup(pgid, "SIGTERM");
  const deadline = Date.now() + 8000;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
  if (groupAlive(pgid)) killGroup(pgid, "SIGKILL");
  groups.delete(pgid);
}

function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const pgid of groups) killGroup(pgid, "SIGKILL");
  });
}

interface Daemon {
  name: string;
  child: ChildProcess;
  logFile: string;
}

function daemon(
  name: string,
  command: string,
  args: string[],
  logDir: string,
  env: NodeJS.ProcessEnv = {},
  cwd?: string,
): Daemon {
  const logFile = join(logDir, `${name}.log`);
  const fd = openSync(logFile, "a");
  try {
    const child = spawn(command, args, {
      detached: true,
      stdio: ["ignore", fd, fd],
      env: { ...process.env, ...env },
      ...(cwd ? { cwd } : {}),
    });
    child.unref();
    if (child.pid) groups.add(child.pid);
    return { name, child, logFile };
  } finally {
    closeSync(fd);
  }
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Polls `check` until true; fails with the daemon's log tail if it exits or time runs out. */
async function waitFor(
  what: string,
  d: Daemon,
  check: () => Promise<boolean>,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  d.child.once("exit", () => {
    exited = true;
  });
  for (;;) {
    if (exited || d.child.exitCode !== null)
      throw new Error(`${d.name} exited while waiting for ${what}:\n${tail(d.logFile)}`);
    try {
      if (await check()) return;
    } catch {
      // Not yet.
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; ${d.name}'s log:\n${tail(d.logFile)}`);
    await sleep(250);
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function httpAnswers(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
  return response.status < 500;
}

async function tool(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await run(command, args, {
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const { stdout = "", stderr = "" } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed:\n${`${stdout}\n${stderr}`.trim().slice(-3000)}`);
  }
}

/** An oslo.config file from sections of key → value. */
function ini(sections: Record<string, Record<string, string | number | boolean>>): string {
  return Object.entries(sections)
    .map(([section, values]) =>
      [`[${section}]`, ...Object.entries(values).map(([k, v]) => `${k} = ${v}`)].join("\n"),
    )
    .join("\n\n")
    .concat("\n");
}

// --- startOpenStack -------------------------------------------------------------------------------

const secret = () => randomBytes(12).toString("hex");

export async function startOpenStack(
  log: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<RunningOpenStack> {
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  const mark = (step: string) => {
    timings[step] = (Date.now() - t0) / 1000;
  };
  await ensureOpenStackInstalled();
  mark("install");
  installExitHook();
  const dir = await mkdtemp(join(tmpdir(), "tenantry-openstack-"));
  const logDir = join(dir, "logs");
  await mkdir(logDir, { recursive: true });
  const started: number[] = [];
  let keystone: RunningKeystone | undefined;
  const stopAll = async () => {
    for (const pgid of started.reverse()) await stopGroup(pgid);
    await keystone?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const track = (d: Daemon) => {
    if (d.child.pid) started.push(d.child.pid);
    return d;
  };
  try {
    // MariaDB and RabbitMQ first; Keystone (SQLite, ./keystone.ts) at the same time.
    const dbPassword = secret();
    const [mariadbPort, rabbitPort, epmdPort, rabbitDistPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dbDir = join(dir, "mysql");
    await mkdir(dbDir, { recursive: true });
    const keystoneStarting = startKeystone();
    await tool("mariadb-install-db", [
      "--no-defaults",
      `--datadir=${dbDir}`,
      // As root, like every daemon here: the folder is the test's own.
      "--user=root",
      "--auth-root-authentication-method=socket",
      "--skip-test-db",
    ]);
    const socket = join(dbDir, "mysqld.sock");
    const mariadb = track(
      daemon(
        "mariadb",
        "/usr/sbin/mariadbd",
        [
          "--no-defaults",
          `--datadir=${dbDir}`,
          `--socket=${socket}`,
          `--port=${mariadbPort}`,
          "--bind-address=127.0.0.1",
          "--user=root",
          "--innodb-buffer-pool-size=64M",
          "--skip-log-bin",
          `--pid-file=${join(dbDir, "mysqld.pid")}`,
          "--max-connections=500",
        ],
        logDir,
      ),
    );
    const rabbitDir = join(dir, "rabbitmq");
    await mkdir(rabbitDir, { recursive: true });
    await writeFile(join(rabbitDir, "enabled_plugins"), "[].\n");
    await writeFile(join(rabbitDir, ".erlang.cookie"), randomBytes(16).toString("hex"));
    await chmod(join(rabbitDir, ".erlang.cookie"), 0o400);
    const erlArgs = `-kernel inet_dist_use_interface {127,0,0,1} -kernel inet_dist_listen_min ${rabbitDistPort} -kernel inet_dist_listen_max ${rabbitDistPort}`;
    const rabbitEnv: NodeJS.ProcessEnv = {
      HOME: rabbitDir,
      RABBITMQ_CONF_ENV_FILE: join(rabbitDir, "rabbitmq-env.conf"),
      RABBITMQ_NODENAME: "rabbit@localhost",
      RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
      RABBITMQ_NODE_PORT: String(rabbitPort),
      RABBITMQ_DIST_PORT: String(rabbitDistPort),
      RABBITMQ_MNESIA_BASE: join(rabbitDir, "mnesia"),
      RABBITMQ_LOG_BASE: logDir,
      RABBITMQ_ENABLED_PLUGINS_FILE: join(rabbitDir, "enabled_plugins"),
      RABBITMQ_CONFIG_FILE: join(rabbitDir, "rabbitmq"),
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: erlArgs,
      ERL_EPMD_ADDRESS: "127.0.0.1",
      ERL_EPMD_PORT: String(epmdPort),
    };
    await writeFile(
      join(rabbitDir, "rabbitmq-env.conf"),
      `NODENAME=rabbit@localhost\nNODE_IP_ADDRESS=127.0.0.1\nERL_EPMD_ADDRESS=127.0.0.1\nSERVER_ADDITIONAL_ERL_ARGS="${erlArgs}"\n`,
    );
    await writeFile(join(rabbitDir, "rabbitmq.conf"), "loopback_users = none\n");
    // epmd in the foreground, in a group of its own: Erlang would otherwise start a daemon that outlives us.
    const epmd = track(
      daemon("epmd", "/usr/bin/epmd", ["-port", String(epmdPort), "-address", "127.0.0.1"], logDir, {
        ERL_EPMD_ADDRESS: "127.0.0.1",
      }),
    );
    await waitFor("epmd", epmd, () => portOpen(epmdPort), 20_000);
    const rabbit = track(
      daemon("rabbitmq", "/usr/lib/rabbitmq/bin/rabbitmq-server", [], logDir, rabbitEnv, rabbitDir),
    );
    await waitFor("MariaDB", mariadb, () => portOpen(mariadbPort), 60_000);
    const databases = ["placement", "glance", "neutron", "nova_api", "nova", "nova_cell0"];
    await tool("mariadb", [
      "--no-defaults",
      `--socket=${socket}`,
      "-uroot",
      "-e",
      [
        ...databases.map((d) => `CREATE DATABASE IF NOT EXISTS ${d};`),
        `CREATE USER 'openstack'@'127.0.0.1' IDENTIFIED BY '${dbPassword}';`,
        "GRANT ALL PRIVILEGES ON *.* TO 'openstack'@'127.0.0.1';",
        "FLUSH PRIVILEGES;",
      ].join(" "),
    ]);
    const db = (name: string) => `mysql+pymysql://openstack:${dbPassword}@127.0.0.1:${mariadbPort}/${name}`;
    mark("mariadb");
    keystone = await keystoneStarting;
    mark("keystone");
    await waitFor("RabbitMQ", rabbit, () => portOpen(rabbitPort), 120_000);
    mark("rabbitmq");
    const transport = `rabbit://guest:guest@127.0.0.1:${rabbitPort}/`;

    // Service users, the tenantry project and its user.
    const servicePassword = secret();
    const service = await keystone.createProject(`os-service-${secret().slice(0, 6)}`);
    for (const name of ["nova", "placement", "glance", "neutron"]) {
      const user = await keystone.createUser({
        name: `${name}-${service.name}`,
        password: servicePassword,
        defaultProject: service,
      });
      await keystone.assignRole(user, service, "admin");
      await keystone.assignRole(user, service, "service");
    }
    const project = await keystone.createProject("tenantry-nodes");
    const userPassword = secret();
    const tenantryUser = await keystone.createUser({
      name: "tenantry-nodes",
      password: userPassword,
      defaultProject: project,
    });
    await keystone.assignRole(tenantryUser, project, "member");
    const authUrl = keystone.url;
    const authRoot = authUrl.replace(/\/v3$/, "");
    const authtoken = (name: string) => ({
      www_authenticate_uri: authRoot,
      auth_url: authRoot,
      auth_type: "password",
      project_domain_name: "Default",
      user_domain_name: "Default",
      project_name: service.name,
      username: `${name}-${service.name}`,
      password: servicePassword,
      service_token_roles_required: true,
    });
    const serviceAuth = (name: string) => ({
      auth_type: "password",
      auth_url: authRoot,
      project_domain_name: "Default",
      user_domain_name: "Default",
      project_name: service.name,
      username: `${name}-${service.name}`,
      password: servicePassword,
      region_name: "RegionOne",
      valid_interfaces: "public",
    });

    const [placementPort, glancePort, neutronPort, novaPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    await keystone.registerService("placement", "placement", `http://127.0.0.1:${placementPort}`);
    await keystone.registerService("image", "glance", `http://127.0.0.1:${glancePort}`);
    await keystone.registerService("network", "neutron", `http://127.0.0.1:${neutronPort}`);
    await keystone.registerService("compute", "nova", `http://127.0.0.1:${novaPort}/v2.1`);

    // Configuration files.
    const placementDir = join(dir, "placement");
    await mkdir(placementDir, { recursive: true });
    await writeFile(
      join(placementDir, "placement.conf"),
      ini({
        DEFAULT: { log_file: join(logDir, "placement-app.log"), use_stderr: false },
        placement_database: { connection: db("placement") },
        api: { auth_strategy: "keystone" },
        keystone_authtoken: authtoken("placement"),
      }),
    );
    const glanceConf = join(dir, "glance-api.conf");
    await writeFile(
      glanceConf,
      ini({
        DEFAULT: {
          bind_host: "127.0.0.1",
          bind_port: glancePort,
          workers: 1,
          log_file: join(logDir, "glance-app.log"),
          use_stderr: false,
          enabled_backends: "fs:file",
        },
        database: { connection: db("glance") },
        keystone_authtoken: authtoken("glance"),
        paste_deploy: { flavor: "keystone", config_file: "/etc/glance/glance-api-paste.ini" },
        glance_store: { default_backend: "fs" },
        fs: { filesystem_store_datadir: join(dir, "images") },
        oslo_policy: { enforce_new_defaults: false, enforce_scope: false },
      }),
    );
    const neutronConf = join(dir, "neutron.conf");
    const ml2Conf = join(dir, "ml2_conf.ini");
    await writeFile(
      neutronConf,
      ini({
        DEFAULT: {
          bind_host: "127.0.0.1",
          bind_port: neutronPort,
          api_workers: 1,
          rpc_workers: 0,
          rpc_state_report_workers: 0,
          core_plugin: "ml2",
          service_plugins: "",
          auth_strategy: "keystone",
          transport_url: transport,
          notify_nova_on_port_status_changes: false,
          notify_nova_on_port_data_changes: false,
          dhcp_agent_notification: false,
          api_paste_config: "/etc/neutron/api-paste.ini",
          log_file: join(logDir, "neutron-app.log"),
          use_stderr: false,
          state_path: join(dir, "neutron-state"),
        },
        database: { connection: db("neutron") },
        keystone_authtoken: authtoken("neutron"),
        oslo_concurrency: { lock_path: join(dir, "neutron-locks") },
        oslo_messaging_notifications: { driver: "noop" },
      }),
    );
    await writeFile(
      ml2Conf,
      ini({
        ml2: {
          type_drivers: "local,flat",
          tenant_network_types: "local",
          mechanism_drivers: "",
          extension_drivers: "port_security",
        },
      }),
    );
    const novaCommon = {
      DEFAULT: {
        transport_url: transport,
        compute_driver: "fake.FakeDriver",
        my_ip: "127.0.0.1",
        host: `tenantry-compute-${secret().slice(0, 6)}`,
        enabled_apis: "osapi_compute",
        osapi_compute_listen: "127.0.0.1",
        osapi_compute_listen_port: novaPort,
        osapi_compute_workers: 1,
        periodic_fuzzy_delay: 0,
        state_path: join(dir, "nova-state"),
        log_dir: logDir,
        use_stderr: false,
      },
      api: { auth_strategy: "keystone" },
      wsgi: { api_paste_config: "/etc/nova/api-paste.ini" },
      conductor: { workers: 1 },
      scheduler: { workers: 1, discover_hosts_in_cells_interval: 2 },
      keystone_authtoken: authtoken("nova"),
      placement: serviceAuth("nova"),
      neutron: serviceAuth("nova"),
      glance: { api_servers: `http://127.0.0.1:${glancePort}` },
      oslo_concurrency: { lock_path: join(dir, "nova-locks") },
      oslo_policy: { enforce_new_defaults: false, enforce_scope: false },
    };
    const novaConf = join(dir, "nova.conf");
    await writeFile(
      novaConf,
      ini({
        ...novaCommon,
        api_database: { connection: db("nova_api") },
        database: { connection: db("nova") },
      }),
    );
    // The compute service talks to the databases through the conductor only.
    const computeConf = join(dir, "nova-compute.conf");
    await writeFile(computeConf, ini(novaCommon));

    // Schemas, in parallel where they do not depend on one another.
    const placementEnv = { OS_PLACEMENT_CONFIG_DIR: placementDir };
    await Promise.all([
      tool(PYTHON, [
        "/usr/bin/placement-manage",
        "--config-file",
        join(placementDir, "placement.conf"),
        "db",
        "sync",
      ]),
      tool(PYTHON, ["/usr/bin/glance-manage", "--config-file", glanceConf, "db_sync"]),
      tool(PYTHON, [
        "/usr/bin/neutron-db-manage",
        "--config-file",
        neutronConf,
        "--config-file",
        ml2Conf,
        "upgrade",
        "heads",
      ]),
      (async () => {
        await tool(PYTHON, ["/usr/bin/nova-manage", "--config-file", novaConf, "api_db", "sync"]);
        await tool(PYTHON, [
          "/usr/bin/nova-manage",
          "--config-file",
          novaConf,
          "cell_v2",
          "map_cell0",
          "--database_connection",
          db("nova_cell0"),
        ]);
        await tool(PYTHON, [
          "/usr/bin/nova-manage",
          "--config-file",
          novaConf,
          "cell_v2",
          "create_cell",
          "--name=cell1",
          "--verbose",
        ]);
        await tool(PYTHON, ["/usr/bin/nova-manage", "--config-file", novaConf, "db", "sync"]);
      })(),
    ]);
    mark("schemas");

    const placement = track(
      daemon(
        "placement",
        "uwsgi",
        [
          "--plugins",
          "python3",
          "--http-socket",
          `127.0.0.1:${placementPort}`,
          "--wsgi-file",
          "/usr/bin/placement-api",
          "--master",
          "--processes",
          "1",
          "--threads",
          "4",
          "--die-on-term",
          "--need-app",
        ],
        logDir,
        placementEnv,
      ),
    );
    const glance = track(
      daemon("glance-api", PYTHON, ["/usr/bin/glance-api", "--config-file", glanceConf], logDir),
    );
    const neutron = track(
      daemon(
        "neutron-server",
        PYTHON,
        ["/usr/bin/neutron-server", "--config-file", neutronConf, "--config-file", ml2Conf],
        logDir,
      ),
    );
    const conductor = track(
      daemon("nova-conductor", PYTHON, ["/usr/bin/nova-conductor", "--config-file", novaConf], logDir),
    );
    track(daemon("nova-scheduler", PYTHON, ["/usr/bin/nova-scheduler", "--config-file", novaConf], logDir));
    const api = track(daemon("nova-api", PYTHON, ["/usr/bin/nova-api", "--config-file", novaConf], logDir));
    await waitFor("Placement", placement, () => httpAnswers(`http://127.0.0.1:${placementPort}/`));
    await waitFor("Glance", glance, () => httpAnswers(`http://127.0.0.1:${glancePort}/versions`));
    await waitFor("Neutron", neutron, () => httpAnswers(`http://127.0.0.1:${neutronPort}/`));
    await waitFor("Nova's API", api, () => httpAnswers(`http://127.0.0.1:${novaPort}/`));
    // The compute service starts once the conductor's queue exists (it asks the conductor at start).
    await waitFor("the conductor", conductor, async () =>
      /Starting conductor node|Joined ServiceGroup/.test(
        readFileSync(join(logDir, "nova-conductor.log"), "utf8"),
      ),
    );
    const compute = track(
      daemon(
        "nova-compute",
        PYTHON,
        [
          "-c",
          "import sys; from nova.cmd.compute import main; sys.argv = ['nova-compute', '--config-file', sys.argv[1]]; main()",
          computeConf,
        ],
        logDir,
      ),
    );
    mark("daemons");

    const computeUrl = `http://127.0.0.1:${novaPort}/v2.1`;
    const client = openStackClient({
      authUrl,
      admin: {
        username: keystone.admin.username,
        password: keystone.admin.password,
        project: keystone.admin.project,
      },
      user: { username: tenantryUser.name, password: userPassword, projectName: project.name },
      computeUrl,
      imageId: "",
      imageName: "cirros",
      logDir,
      timings,
    });
    const call = client.adminCall;
    const computeAdmin = client.computeAdmin;

    // Neutron maps its database models on the first query; a first call that is not Nova's.
    await waitFor("Neutron's API", neutron, async () => {
      await call(`http://127.0.0.1:${neutronPort}/v2.0/networks`, "GET");
      return true;
    });
    // An image (1 KiB, raw, in Glance's file store) and the flavors.
    const imageName = client.imageName;
    const image = await call<{ id: string }>(`http://127.0.0.1:${glancePort}/v2/images`, "POST", {
      name: imageName,
      disk_format: "raw",
      container_format: "bare",
      visibility: "public",
    });
    await call(`http://127.0.0.1:${glancePort}/v2/images/${image.id}/file`, "PUT", new Uint8Array(1024), {
      "Content-Type": "application/octet-stream",
    });
    for (const flavor of OPENSTACK_FLAVORS) {
      await computeAdmin("POST", "/flavors", { flavor: { ...flavor } });
    }
    // The compute host is mapped to its cell by the scheduler's discovery; then servers can go there.
    await waitFor(
      "the compute host to be discovered",
      compute,
      async () => {
        const { hypervisors } = await computeAdmin<{ hypervisors: { status: string; state: string }[] }>(
          "GET",
          "/os-hypervisors",
        );
        return hypervisors.some((h) => h.state === "up");
      },
      180_000,
    );
    mark("ready");
    log(`openstack: Nova at ${computeUrl} ready after ${timings.ready?.toFixed(1)} s (logs ${logDir})`);
    return { ...client, imageId: image.id, stop: stopAll };
  } catch (err) {
    await stopAll().catch(() => {});
    throw err;
  }
}

// --- the hypervisor ---------------------------------------------------------------------------------

interface NovaServer {
  id: string;
  name: string;
  status: string;
  metadata?: Record<string, string>;
  flavor?: { original_name?: string };
  "OS-EXT-SRV-ATTR:user_data"?: string | null;
}

/**
 * Plays the hypervisor Nova's fake driver does not have: every ACTIVE server with user data gets a
 * simulated machine (named as the server, with its flavor) that boots from that user data; a
 * deleted server's machine is stopped. Returns the function that stops watching.
 */
export function bootServersAsMachines(
  openstack: OpenStackClient,
  host: MachineHost,
  intervalMs = 500,
): () => Promise<void> {
  const booted = new Map<string, string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const { servers } = await openstack.computeAdmin<{ servers: NovaServer[] }>(
          "GET",
          "/servers/detail?all_tenants=1",
        );
        const live = new Set<string>();
        for (const server of servers) {
          if (server.status !== "ACTIVE") continue;
          live.add(server.id);
          if (booted.has(server.id)) continue;
          const userData = server["OS-EXT-SRV-ATTR:user_data"];
          if (!userData) continue;
          booted.set(server.id, server.name);
          await host.launch({
            name: server.name,
            uid: server.metadata?.["tenantry-worker-node-uid"] ?? server.id,
            clusterId: server.metadata?.["tenantry-cluster-id"] ?? "",
            flavor: server.flavor?.original_name ?? "m1.small",
            userData: Buffer.from(userData, "base64").toString(),
          });
        }
        for (const [id, name] of booted) {
          if (live.has(id)) continue;
          booted.delete(id);
          await host.stop(name);
        }
      } catch (err) {
        if (!stopped) process.stderr.write(`openstack hypervisor: ${(err as Error).message}\n`);
      }
      await sleep(intervalMs);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

// --- one OpenStack for the test run ---------------------------------------------------------------

/** Where scripts/test.ts tells test files about the OpenStack it starts for the run. */
export interface SharedOpenStackFiles {
  /** Written with the OpenStackInfo once it serves. */
  infoFile: string;
  /** Written with the reason if it could not start. */
  errorFile: string;
}

/**
 * The OpenStack of the test run (scripts/test.ts starts it beside the clusters when a test file
 * needs it), waited for; without one (a test file run on its own), one of this process's own.
 */
export async function sharedOpenStack(): Promise<{ openstack: OpenStackClient; stop(): Promise<void> }> {
  const envFile = process.env.TENANTRY_TEST_ENV;
  const shared = envFile
    ? (JSON.parse(readFileSync(envFile, "utf8")) as { openstack?: SharedOpenStackFiles }).openstack
    : undefined;
  if (!shared) {
    const own = await startOpenStack();
    return { openstack: own, stop: () => own.stop() };
  }
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    if (existsSync(shared.infoFile)) {
      const info = JSON.parse(readFileSync(shared.infoFile, "utf8")) as OpenStackInfo;
      return { openstack: openStackClient(info), stop: async () => {} };
    }
    if (existsSync(shared.errorFile))
      throw new Error(`the test run's OpenStack did not start: ${readFileSync(shared.errorFile, "utf8")}`);
    if (Date.now() > deadline) throw new Error("the test run's OpenStack did not start within 20 minutes");
    await sleep(1000);
  }
}
