/**
 * A real OpenStack Keystone (Debian's packages, SQLite, Fernet tokens) served by uWSGI on a
 * loopback port, for tests of the Keystone identity provider. Each `startKeystone` gets its own
 * database, keys and port; `stop` (or the test process exiting) removes all of it.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { freePort } from "../../src/localcluster/index.js";
import { type DebianInstall, ensureDebianPackages } from "./debian.js";

const run = promisify(execFile);

const PACKAGES = ["keystone", "uwsgi", "uwsgi-plugin-python3"];
const WSGI_PUBLIC = "/usr/bin/keystone-wsgi-public";
const PYTHON_PLUGIN = "/usr/lib/uwsgi/plugins/python3_plugin.so";

export interface KeystoneDomain {
  id: string;
  name: string;
}

export interface KeystoneProject {
  id: string;
  name: string;
  domain: KeystoneDomain;
}

export interface KeystoneUser {
  id: string;
  name: string;
  password: string;
  domain: KeystoneDomain;
}

export interface KeystoneRole {
  id: string;
  name: string;
}

export interface RunningKeystone {
  /** The v3 endpoint, `http://127.0.0.1:PORT/v3`. */
  url: string;
  /** The cloud admin made by `keystone-manage bootstrap` (role `admin` on project `admin`, domain `Default`). */
  admin: { username: string; password: string; project: string; domain: string };
  /** A user with the `service` role on project `service`: allowed to validate other users' tokens. */
  service: { username: string; password: string; project: string; domain: string };
  /** Where Keystone and uWSGI log. */
  logFiles: string[];
  /** Any call to Keystone's API as the cloud admin (services, endpoints, …); the JSON it answers. */
  adminCall(method: string, path: string, body?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * Registers a service in the catalog with one URL for its public, internal and admin endpoints
   * (in RegionOne), as other OpenStack services find each other there.
   */
  registerService(type: string, name: string, url: string): Promise<void>;
  createDomain(name: string): Promise<KeystoneDomain>;
  /** A project in `domain` (default: the `Default` domain). */
  createProject(name: string, domain?: KeystoneDomain): Promise<KeystoneProject>;
  createUser(spec: {
    name: string;
    password: string;
    domain?: KeystoneDomain;
    defaultProject?: KeystoneProject;
  }): Promise<KeystoneUser>;
  /** The role of that name, created if missing (`admin`, `member`, `reader`, `service` exist from the start). */
  createRole(name: string): Promise<KeystoneRole>;
  assignRole(user: KeystoneUser, project: KeystoneProject, role: string): Promise<void>;
  /** Disabling a user also revokes every token the user has. */
  setUserEnabled(user: KeystoneUser, enabled: boolean): Promise<void>;
  /** A token from a password login, scoped to `project` (or to the user's default project). */
  passwordToken(user: KeystoneUser, project?: KeystoneProject): Promise<string>;
  /**
   * A token for the user that has already expired. Keystone caps a token issued for an application
   * credential at the credential's `expires_at`, so a credential living `seconds` yields one.
   */
  expiredToken(user: KeystoneUser, project: KeystoneProject, seconds?: number): Promise<string>;
  stop(): Promise<void>;
}

// --- installation -------------------------------------------------------------------------------

export const KEYSTONE_INSTALL: DebianInstall = {
  label: "keystone",
  packages: PACKAGES,
  provides: ["keystone-manage", "uwsgi", WSGI_PUBLIC, PYTHON_PLUGIN],
  expect: "about a minute",
};

/** Installs Keystone and uWSGI from Debian's packages unless they are there. */
export function ensureKeystoneInstalled(): Promise<void> {
  return ensureDebianPackages(KEYSTONE_INSTALL);
}

// --- processes ------------------------------------------------------------------------------------

/** Process groups and folders still to clean up if the test process exits without `stop()`. */
const leftovers = new Map<string, { pgid?: number }>();

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

function cleanUpLeftovers(): void {
  for (const [dir, entry] of leftovers) {
    if (entry.pgid) killGroup(entry.pgid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
  leftovers.clear();
}

let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", cleanUpLeftovers);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      cleanUpLeftovers();
      // Then die of the signal as the process would have without this handler.
      process.kill(process.pid, signal);
    });
  }
}

async function keystoneManage(config: string, args: string[]): Promise<void> {
  try {
    await run("keystone-manage", ["--config-file", config, ...args], { maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const { stderr = "", stdout = "" } = err as { stderr?: string; stdout?: string };
    throw new Error(`keystone-manage ${args[0]} failed:\n${`${stdout}\n${stderr}`.trim().slice(-3000)}`);
  }
}

/**
 * Keystone on SQLite's default rollback journal fails some requests with "database is locked"
 * (creating an application credential commits while another of its connections still reads);
 * with a write-ahead log readers never block a commit.
 */
async function useWriteAheadLog(database: string): Promise<void> {
  await run("python3", [
    "-c",
    "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=WAL').fetchall()",
    database,
  ]);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

/** Polls `GET /v3` until Keystone answers (true), or uWSGI exits first (false). */
async function waitUntilServing(url: string, child: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited(child).then(() => {
    gone = true;
  });
  while (Date.now() < deadline) {
    if (gone) return false;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return true;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`Keystone at ${url} did not answer within ${timeoutMs / 1000} s`);
}

// --- REST helpers ---------------------------------------------------------------------------------

interface Json {
  [key: string]: unknown;
}

async function call(
  url: string,
  method: string,
  path: string,
  token: string | undefined,
  body?: Json,
): Promise<{ status: number; headers: Headers; json: Json }> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers["X-Auth-Token"] = token;
  if (body) headers["Content-Type"] = "application/json";
  const response = await fetch(`${url}${path}`, {
    method,
    headers,
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  const json = text ? (JSON.parse(text) as Json) : {};
  if (!response.ok) {
    throw new Error(`Keystone ${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  }
  return { status: response.status, headers: response.headers, json };
}

function field<T>(json: Json, key: string): T {
  const value = json[key];
  if (value === undefined) throw new Error(`Keystone's answer has no "${key}": ${JSON.stringify(json)}`);
  return value as T;
}

function passwordAuth(
  user: { name: string; password: string; domain: string },
  project?: KeystoneProject,
): Json {
  return {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: user.name, domain: { name: user.domain }, password: user.password } },
      },
      ...(project ? { scope: { project: { id: project.id } } } : {}),
    },
  };
}

async function issueToken(url: string, auth: Json): Promise<string> {
  const { headers } = await call(url, "POST", "/auth/tokens?nocatalog", undefined, auth);
  const token = headers.get("x-subject-token");
  if (!token) throw new Error("Keystone issued a token without X-Subject-Token");
  return token;
}

// --- startKeystone --------------------------------------------------------------------------------

function secret(): string {
  return randomBytes(18).toString("base64url");
}

export async function startKeystone(): Promise<RunningKeystone> {
  await ensureKeystoneInstalled();
  installExitHook();
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), "tenantry-keystone-"));
  const entry: { pgid?: number } = {};
  leftovers.set(dir, entry);
  try {
    const config = join(dir, "keystone.conf");
    const database = join(dir, "keystone.db");
    await writeFile(
      config,
      [
        "[DEFAULT]",
        `log_file = ${join(dir, "keystone.log")}`,
        "use_stderr = false",
        // bcrypt at its default cost makes every password login and user creation take a quarter second.
        "[identity]",
        "password_hash_rounds = 4",
        "[database]",
        `connection = sqlite:///${database}`,
        "[token]",
        "provider = fernet",
        "[fernet_tokens]",
        `key_repository = ${join(dir, "fernet-keys")}`,
        "[credential]",
        `key_repository = ${join(dir, "credential-keys")}`,
        "",
      ].join("\n"),
    );
    const owner = ["--keystone-user", "root", "--keystone-group", "root"];
    await Promise.all([
      keystoneManage(config, ["db_sync"]).then(() => useWriteAheadLog(database)),
      keystoneManage(config, ["fernet_setup", ...owner]),
      keystoneManage(config, ["credential_setup", ...owner]),
    ]);

    const adminPassword = secret();
    const uwsgiLog = join(dir, "uwsgi.log");
    let url = "";
    let child: ChildProcess | undefined;
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      url = `http://127.0.0.1:${port}/v3`;
      // Bootstrap again on a retry: it moves the catalog's endpoints to the new port.
      await keystoneManage(config, [
        "bootstrap",
        // One argument: a random password may start with "-", which argparse takes for an option.
        `--bootstrap-password=${adminPassword}`,
        "--bootstrap-public-url",
        `${url}/`,
        "--bootstrap-internal-url",
        `${url}/`,
        "--bootstrap-admin-url",
        `${url}/`,
        "--bootstrap-region-id",
        "RegionOne",
      ]);
      const log = openSync(uwsgiLog, "w");
      try {
        child = spawn(
          "uwsgi",
          [
            "--plugins",
            "python3",
            "--http-socket",
            `127.0.0.1:${port}`,
            "--wsgi-file",
            WSGI_PUBLIC,
            "--master",
            "--processes",
            "1",
            "--threads",
            "4",
            "--die-on-term",
            "--need-app",
            // Keystone's uWSGI speaks HTTP/1.0-style: say so, or clients reuse sockets it has closed.
            "--add-header",
            "Connection: close",
          ],
          {
            cwd: dir,
            detached: true,
            stdio: ["ignore", log, log],
            env: { ...process.env, OS_KEYSTONE_CONFIG_FILES: config },
          },
        );
      } finally {
        closeSync(log);
      }
      child.unref();
      entry.pgid = child.pid;
      if (await waitUntilServing(url, child, 60_000)) break;
      const output = readFileSync(uwsgiLog, "utf8");
      if (attempt < 5 && /Address already in use/.test(output)) continue;
      throw new Error(`uWSGI serving Keystone exited:\n${output.trim().split("\n").slice(-15).join("\n")}`);
    }
    const pgid = child.pid!;

    const admin = { username: "admin", password: adminPassword, project: "admin", domain: "Default" };
    let adminToken: string | undefined;
    const adminCall = async (method: string, path: string, body?: Json): Promise<Json> => {
      adminToken ??= await issueToken(url, {
        auth: {
          identity: {
            methods: ["password"],
            password: {
              user: { name: admin.username, domain: { name: admin.domain }, password: admin.password },
            },
          },
          scope: { project: { name: admin.project, domain: { name: admin.domain } } },
        },
      });
      return (await call(url, method, path, adminToken, body)).json;
    };
    const defaultDomain = field<KeystoneDomain>(await adminCall("GET", "/domains/default"), "domain");

    const roleCache = new Map<string, KeystoneRole>();
    const keystone: RunningKeystone = {
      url,
      admin,
      service: { username: "tenantry", password: secret(), project: "service", domain: "Default" },
      logFiles: [join(dir, "keystone.log"), uwsgiLog],
      adminCall,

      async registerService(type, name, serviceUrl) {
        const service = field<{ id: string }>(
          await adminCall("POST", "/services", { service: { type, name, enabled: true } }),
          "service",
        );
        for (const endpointInterface of ["public", "internal", "admin"]) {
          await adminCall("POST", "/endpoints", {
            endpoint: {
              service_id: service.id,
              interface: endpointInterface,
              url: serviceUrl,
              region_id: "RegionOne",
            },
          });
        }
      },

      async createDomain(name) {
        const json = await adminCall("POST", "/domains", { domain: { name, enabled: true } });
        const domain = field<{ id: string; name: string }>(json, "domain");
        return { id: domain.id, name: domain.name };
      },

      async createProject(name, domain = defaultDomain) {
        const json = await adminCall("POST", "/projects", { project: { name, domain_id: domain.id } });
        return { id: field<{ id: string }>(json, "project").id, name, domain };
      },

      async createUser({ name, password, domain = defaultDomain, defaultProject }) {
        const json = await adminCall("POST", "/users", {
          user: {
            name,
            password,
            domain_id: domain.id,
            enabled: true,
            ...(defaultProject ? { default_project_id: defaultProject.id } : {}),
          },
        });
        return { id: field<{ id: string }>(json, "user").id, name, password, domain };
      },

      async createRole(name) {
        const known = roleCache.get(name);
        if (known) return known;
        const listed = field<KeystoneRole[]>(
          await adminCall("GET", `/roles?name=${encodeURIComponent(name)}`),
          "roles",
        );
        const role =
          listed[0] ?? field<KeystoneRole>(await adminCall("POST", "/roles", { role: { name } }), "role");
        roleCache.set(name, { id: role.id, name: role.name });
        return role;
      },

      async assignRole(user, project, roleName) {
        const role = await keystone.createRole(roleName);
        await adminCall("PUT", `/projects/${project.id}/users/${user.id}/roles/${role.id}`);
      },

      async setUserEnabled(user, enabled) {
        await adminCall("PATCH", `/users/${user.id}`, { user: { enabled } });
      },

      passwordToken(user, project) {
        return issueToken(url, passwordAuth({ ...user, domain: user.domain.name }, project));
      },

      async expiredToken(user, project, seconds = 2) {
        const own = await keystone.passwordToken(user, project);
        // Keystone stores expires_at to the second: round up so the credential outlives its creation.
        const expiresAt = new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000);
        const { json } = await call(url, "POST", `/users/${user.id}/application_credentials`, own, {
          application_credential: {
            name: `expiring-${randomBytes(4).toString("hex")}`,
            expires_at: expiresAt.toISOString().replace(/\.\d+Z$/, ""),
          },
        });
        const credential = field<{ id: string; secret: string }>(json, "application_credential");
        const token = await issueToken(url, {
          auth: {
            identity: {
              methods: ["application_credential"],
              application_credential: { id: credential.id, secret: credential.secret },
            },
          },
        });
        await sleep(Math.max(0, expiresAt.getTime() - Date.now()) + 250);
        return token;
      },

      async stop() {
        killGroup(pgid, "SIGTERM");
        if (!(await groupGone(pgid, 5000))) {
          killGroup(pgid, "SIGKILL");
          await groupGone(pgid, 5000);
        }
        leftovers.delete(dir);
        await rm(dir, { recursive: true, force: true });
      },
    };

    const serviceProject = await keystone.createProject(keystone.service.project);
    const serviceUser = await keystone.createUser({
      name: keystone.service.username,
      password: keystone.service.password,
      defaultProject: serviceProject,
    });
    await keystone.assignRole(serviceUser, serviceProject, "service");
    process.stderr.write(`keystone: serving ${url} after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return keystone;
  } catch (err) {
    if (entry.pgid) killGroup(entry.pgid, "SIGKILL");
    leftovers.delete(dir);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Pids of the group's live processes (a zombie is dead: only its parent has not collected it yet). */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Fields after the parenthesized command: state, ppid, pgrp, …
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z") members.push(Number(name));
    } catch {
      // Exited while we looked.
    }
  }
  return members;
}

async function groupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (groupMembers(pgid).length > 0) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}
