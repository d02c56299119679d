/**
 * A real OpenID Connect provider for the OIDC tests: Ory Hydra, built from its Go module (cached
 * like the Kubernetes components), serving HTTPS on two loopback ports (public and admin) with an
 * in-memory database. The test plays Hydra's login and consent app: it starts the
 * authorization-code flow as a browser would, accepts the login and consent requests through the
 * admin API (choosing the subject and the ID token's claims, groups among them) and exchanges the
 * code for real ID tokens. `stop` (or the test process exiting) ends Hydra and removes its folder.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pRetry from "p-retry";
import { Agent, request } from "undici";
import { stringify } from "yaml";
import { ensureHydra, freePort } from "../../src/localcluster/index.js";
import { createCertificateAuthority, issueCertificate } from "../../src/pki/index.js";

export interface HydraClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export interface HydraUser {
  /** The ID token's `sub`: what the login app says the user is. */
  subject: string;
  /** Claims the consent app puts in the ID token (`preferred_username`, `groups`, `tenant`, …). */
  claims?: Record<string, unknown>;
}

export interface HydraTokens {
  idToken: string;
  accessToken: string;
  expiresIn: number;
}

export interface RunningHydra {
  /** The issuer exactly as Hydra's discovery document and tokens name it. */
  issuer: string;
  publicUrl: string;
  adminUrl: string;
  /** The CA of Hydra's TLS certificate (both ports). */
  caPem: string;
  version: string;
  logFile: string;
  /** GET on the public port (discovery, JWKS), JSON. */
  publicJson<T = Record<string, unknown>>(path: string): Promise<T>;
  /** Any call to the admin API; its JSON answer. Throws on a status ≥ 300. */
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
  /** An OAuth2 client allowed the authorization-code flow; `idTokenLifespan` e.g. `"4s"`. */
  createClient(options?: { idTokenLifespan?: string }): Promise<HydraClient>;
  /** How long the ID tokens Hydra issues to `client` from now on live, e.g. `"2s"` (Hydra's default is 1h). */
  setIdTokenLifespan(client: HydraClient, lifespan: string): Promise<void>;
  /** The authorization-code flow for `user` with login and consent accepted through the admin API. */
  login(client: HydraClient, user: HydraUser): Promise<HydraTokens>;
  /** A new signing key for ID tokens (Hydra signs with the newest); its key id. */
  rotateIdTokenKey(): Promise<string>;
  stop(): Promise<void>;
}

const ID_TOKEN_KEY_SET = "hydra.openid.id-token";
/** The login and consent app's addresses: Hydra redirects the browser there with a challenge, which the test reads off the redirect. */
const LOGIN_APP = "https://login-app.invalid";

const running = new Set<{ child: ChildProcess; dir: string }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const entry of running) {
      entry.child.kill("SIGKILL");
      rmSync(entry.dir, { recursive: true, force: true });
    }
  });
}

interface Answer {
  status: number;
  location?: string;
  cookies: string[];
  text: string;
}

async function call(
  dispatcher: Agent,
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await request(url, {
    method,
    dispatcher,
    // A connection per request: Hydra (Go's server) may close an idle one just as it is reused.
    reset: true,
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const setCookie = response.headers["set-cookie"];
  const location = response.headers.location;
  return {
    status: response.statusCode,
    ...(typeof location === "string" ? { location } : {}),
    cookies: (Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []).map(
      (c) => c.split(";")[0]!,
    ),
    text: await response.body.text(),
  };
}

/** A browser's cookies for one flow: Hydra keeps its CSRF state there between redirects. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(answer: Answer): void {
    for (const cookie of answer.cookies) {
      const eq = cookie.indexOf("=");
      this.cookies.set(cookie.slice(0, eq), cookie.slice(eq + 1));
    }
  }
  header(): Record<string, string> {
    return this.cookies.size
      ? { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ") }
      : {};
  }
}

async function hydraConfig(dir: string, ports: { public: number; admin: number }) {
  const ca = await createCertificateAuthority("hydra-test-ca", 1);
  const serving = await issueCertificate(ca, {
    commonName: "hydra",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    usage: "server",
    validDays: 1,
  });
  await writeFile(join(dir, "tls.crt"), serving.certPem);
  await writeFile(join(dir, "tls.key"), serving.keyPem, { mode: 0o600 });
  const publicUrl = `https://127.0.0.1:${ports.public}`;
  const config = {
    dsn: "memory",
    serve: {
      public: { host: "127.0.0.1", port: ports.public },
      admin: { host: "127.0.0.1", port: ports.admin },
      tls: { enabled: true, cert: { path: join(dir, "tls.crt") }, key: { path: join(dir, "tls.key") } },
    },
    urls: {
      self: { issuer: publicUrl, public: publicUrl },
      login: `${LOGIN_APP}/login`,
      consent: `${LOGIN_APP}/consent`,
    },
    secrets: { system: [randomBytes(24).toString("hex")] },
    oidc: { subject_identifiers: { supported_types: ["public"] } },
    log: { level: "info", format: "json", leak_sensitive_values: false },
  };
  await writeFile(join(dir, "hydra.yaml"), stringify(config), { mode: 0o600 });
  return { caPem: ca.certPem, publicUrl, adminUrl: `https://127.0.0.1:${ports.admin}` };
}

async function waitReady(dispatcher: Agent, url: string, child: ChildProcess, logFile: string) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`hydra exited with ${child.exitCode}; see ${logFile}`);
    const answer = await call(dispatcher, "GET", `${url}/health/ready`).catch(() => undefined);
    if (answer?.status === 200) return;
    await sleep(200);
  }
  throw new Error(`hydra was not ready at ${url} within 120 s; see ${logFile}`);
}

function isConnectionCut(err: NodeJS.ErrnoException): boolean {
  return err.code === "ECONNRESET" || err.code === "UND_ERR_SOCKET" || err.code === "ERR_HTTP2_STREAM_ERROR";
}

/** `call` again while Hydra cuts the connection or answers that it has no such thing yet, for up to 2 minutes. */
function untilAnswered<T>(call: () => Promise<T>): Promise<T> {
  return pRetry(call, {
    retries: 1000,
    minTimeout: 500,
    maxTimeout: 2000,
    maxRetryTime: 120_000,
    shouldRetry: ({ error }) =>
      isConnectionCut(error as NodeJS.ErrnoException) || / answered 404:/.test(error.message),
  });
}

/** Builds Hydra if needed and starts one instance of it. */
export async function startHydra(): Promise<RunningHydra> {
  const { program, version } = await ensureHydra();
  const dir = await mkdtemp(join(tmpdir(), "tenantry-hydra-"));
  const ports = { public: await freePort(), admin: await freePort() };
  const { caPem, publicUrl, adminUrl } = await hydraConfig(dir, ports);
  const logFile = join(dir, "hydra.log");
  const log = openSync(logFile, "a");
  installExitHook();
  const child = spawn(program, ["serve", "all", "--config", join(dir, "hydra.yaml"), "--sqa-opt-out"], {
    cwd: dir,
    // SQA_OPT_OUT: Hydra sends no usage statistics to Ory.
    env: { PATH: process.env.PATH, HOME: dir, SQA_OPT_OUT: "true" },
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  const entry = { child, dir };
  running.add(entry);
  // HTTP/1.1 (undici 8 offers HTTP/2, which Hydra takes): a request Hydra cuts at its write timeout
  // is then a reset connection, which `untilAnswered` waits out, and `reset` means a fresh one.
  const dispatcher = new Agent({ connect: { ca: caPem }, allowH2: false });
  const stop = async () => {
    if (!running.delete(entry)) return;
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(10_000).then(() => child.kill("SIGKILL"))]);
    }
    await dispatcher.close();
    rmSync(dir, { recursive: true, force: true });
  };
  const json = async <T>(answer: Answer, what: string): Promise<T> => {
    if (answer.status >= 300) throw new Error(`${what} answered ${answer.status}: ${answer.text}`);
    return (answer.text ? JSON.parse(answer.text) : {}) as T;
  };
  const admin = <T>(method: string, path: string, body?: unknown) =>
    call(dispatcher, method as "GET", `${adminUrl}${path}`, {
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } }
        : {}),
    }).then((answer) => json<T>(answer, `hydra admin ${method} ${path}`));
  const publicJson = <T>(path: string) =>
    call(dispatcher, "GET", `${publicUrl}${path}`).then((answer) => json<T>(answer, `hydra GET ${path}`));
  let discovery: { issuer: string };
  try {
    await waitReady(dispatcher, publicUrl, child, logFile);
    await waitReady(dispatcher, adminUrl, child, logFile);
    // The first discovery makes Hydra generate its ID-token signing key (RSA 4096): on a busy
    // machine that outlasts its server's write timeout, which then resets the connection.
    discovery = await untilAnswered(() =>
      publicJson<{ issuer: string }>("/.well-known/openid-configuration"),
    );
    // Likewise any other key the published key set needs: a relying party's first fetch is then quick.
    await untilAnswered(() => publicJson("/.well-known/jwks.json"));
  } catch (err) {
    const tail = readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-15).join("\n");
    await stop();
    throw new Error(`hydra did not start: ${(err as Error).message}\n${tail}`);
  }

  const setIdTokenLifespan = async (client: HydraClient, lifespan: string) => {
    await admin("PUT", `/admin/clients/${client.clientId}/lifespans`, {
      authorization_code_grant_id_token_lifespan: lifespan,
    });
  };

  /** Follows Hydra's redirects (with the flow's cookies) until they leave Hydra's public origin. */
  const browse = async (jar: CookieJar, url: string): Promise<URL> => {
    for (let hops = 0; hops < 10; hops++) {
      const answer = await call(dispatcher, "GET", url, { headers: jar.header() });
      jar.take(answer);
      if (answer.status !== 302 && answer.status !== 303)
        throw new Error(`hydra answered ${answer.status} at ${url}: ${answer.text.slice(0, 500)}`);
      const next = new URL(answer.location!, url);
      if (next.origin !== publicUrl) return next;
      url = next.toString();
    }
    throw new Error("hydra redirected more than 10 times");
  };

  return {
    issuer: discovery.issuer,
    publicUrl,
    adminUrl,
    caPem,
    version,
    logFile,
    publicJson,
    admin,
    async createClient(options = {}) {
      const redirectUri = `${LOGIN_APP}/callback`;
      const created = await admin<{ client_id: string; client_secret: string }>("POST", "/admin/clients", {
        client_name: "tenantry-test",
        grant_types: ["authorization_code"],
        response_types: ["code"],
        scope: "openid",
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "client_secret_post",
      });
      const client = { clientId: created.client_id, clientSecret: created.client_secret, redirectUri };
      if (options.idTokenLifespan) await setIdTokenLifespan(client, options.idTokenLifespan);
      return client;
    },
    setIdTokenLifespan,
    async login(client, user) {
      const jar = new CookieJar();
      const state = randomBytes(16).toString("hex");
      const start = new URL(`${publicUrl}/oauth2/auth`);
      for (const [key, value] of Object.entries({
        client_id: client.clientId,
        response_type: "code",
        scope: "openid",
        redirect_uri: client.redirectUri,
        state,
        nonce: randomBytes(16).toString("hex"),
      }))
        start.searchParams.set(key, value);

      const toLogin = await browse(jar, start.toString());
      const loginChallenge = toLogin.searchParams.get("login_challenge");
      if (!loginChallenge) throw new Error(`hydra sent the browser to ${toLogin} without a login challenge`);
      const loggedIn = await admin<{ redirect_to: string }>(
        "PUT",
        `/admin/oauth2/auth/requests/login/accept?login_challenge=${encodeURIComponent(loginChallenge)}`,
        { subject: user.subject, remember: false },
      );

      const toConsent = await browse(jar, loggedIn.redirect_to);
      const consentChallenge = toConsent.searchParams.get("consent_challenge");
      if (!consentChallenge)
        throw new Error(`hydra sent the browser to ${toConsent} without a consent challenge`);
      const asked = await admin<{ requested_scope: string[] }>(
        "GET",
        `/admin/oauth2/auth/requests/consent?consent_challenge=${encodeURIComponent(consentChallenge)}`,
      );
      const consented = await admin<{ redirect_to: string }>(
        "PUT",
        `/admin/oauth2/auth/requests/consent/accept?consent_challenge=${encodeURIComponent(consentChallenge)}`,
        { grant_scope: asked.requested_scope, remember: false, session: { id_token: user.claims ?? {} } },
      );

      const callback = await browse(jar, consented.redirect_to);
      const code = callback.searchParams.get("code");
      if (callback.searchParams.get("state") !== state || !code)
        throw new Error(`hydra redirected to ${callback} instead of the client's callback with a code`);
      const exchanged = await call(dispatcher, "POST", `${publicUrl}/oauth2/token`, {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: client.redirectUri,
          client_id: client.clientId,
          client_secret: client.clientSecret,
        }).toString(),
      });
      const tokens = await json<{ id_token: string; access_token: string; expires_in: number }>(
        exchanged,
        "hydra's token endpoint",
      );
      return { idToken: tokens.id_token, accessToken: tokens.access_token, expiresIn: tokens.expires_in };
    },
    async rotateIdTokenKey() {
      const kid = `rotated-${randomBytes(6).toString("hex")}`;
      // Generating the key may outlast Hydra's write timeout (the connection is then reset): the
      // key is made all the same, so the outcome is read back rather than asked for again.
      await admin("POST", `/admin/keys/${ID_TOKEN_KEY_SET}`, { alg: "RS256", kid, use: "sig" }).catch(
        (err: NodeJS.ErrnoException) => {
          if (!isConnectionCut(err)) throw err;
        },
      );
      await untilAnswered(() => admin("GET", `/admin/keys/${ID_TOKEN_KEY_SET}/${kid}`));
      return kid;
    },
    stop,
  };
}
