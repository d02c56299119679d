import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { request } from "node:https";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { ENDPOINTS_FILE, type TenantryEndpoints } from "../app/index.js";
import { defaultClustersDir, UserError } from "../common/index.js";
import { LOGIN_PATH, LOGOUT_PATH } from "../identity/index.js";
import { kubeconfigYaml } from "../kube/index.js";

interface LoginOptions {
  username: string;
  provider?: string;
  domain?: string;
  tenant?: string;
  passwordStdin?: boolean;
  endpoints?: string;
  output?: string;
  direct?: boolean;
}

interface LoginAnswer {
  token: string;
  expiresAt: string;
  username: string;
  tenant?: string;
  tenantAdmin: boolean;
  provider: string;
  namespaces: string[];
}

function loadEndpoints(path?: string): TenantryEndpoints {
  const file = path ?? join(defaultClustersDir(), "home", ENDPOINTS_FILE);
  if (!existsSync(file)) {
    throw new UserError(
      path
        ? `--endpoints ${path}: no such file`
        : `no tenantry endpoints at ${file}: start the embedded default with \`npm start\`, or pass --endpoints`,
    );
  }
  return JSON.parse(readFileSync(file, "utf8")) as TenantryEndpoints;
}

async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin || !process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += chunk;
    return text.replace(/\r?\n$/, "");
  }
  // Ask on the terminal without echoing what is typed.
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  const output = rl as unknown as { _writeToOutput: (s: string) => void };
  let asked = false;
  output._writeToOutput = (s: string) => {
    if (!asked) process.stderr.write(s);
  };
  const answer = new Promise<string>((resolve) => rl.question("password: ", resolve));
  asked = true;
  const password = await answer;
  rl.close();
  process.stderr.write("\n");
  return password;
}

function post(
  endpoints: TenantryEndpoints,
  path: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${endpoints.accessUrl}${path}`,
      {
        method: "POST",
        ca: endpoints.accessCaPem,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${endpoints.accessUrl} did not answer in 30 s`)));
    req.on("error", (err) =>
      reject(new UserError(`cannot reach tenantry at ${endpoints.accessUrl}: ${err.message}`, 1)),
    );
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

function problemDetail(text: string): string {
  try {
    const problem = JSON.parse(text) as { detail?: string; title?: string };
    return problem.detail ?? problem.title ?? text;
  } catch {
    return text;
  }
}

/**
 * A kubeconfig using the token: a context per namespace of the user's tenant, the first one current.
 * It points at the tenant gateway (where `kubectl get namespaces` lists the tenant's own) unless
 * `direct` asks for kube-apiserver itself.
 */
export function tokenKubeconfigText(
  endpoints: TenantryEndpoints,
  answer: LoginAnswer,
  direct = false,
): string {
  const server =
    !direct && endpoints.gateway
      ? endpoints.gateway
      : { url: endpoints.apiServer, caPem: endpoints.apiServerCaPem };
  const cluster = {
    name: endpoints.cluster,
    server: server.url,
    caData: Buffer.from(server.caPem).toString("base64"),
  };
  const user = { name: `${endpoints.cluster}/${answer.username}`, token: answer.token };
  const namespaces = answer.namespaces.length ? answer.namespaces : [undefined];
  return kubeconfigYaml(
    namespaces.map((ns) => ({
      name: ns ? `${endpoints.cluster}/${ns}` : endpoints.cluster,
      cluster,
      user,
      ...(ns ? { namespace: ns } : {}),
    })),
  );
}

export function registerLoginCommands(program: Command): void {
  program
    .command("login")
    .description("log in to tenantry's identity service and write a kubeconfig for kubectl")
    .requiredOption("-u, --username <name>", "user name (built-in, or Keystone with --provider keystone)")
    .option("--provider <name>", "identity provider: builtin (default) or keystone")
    .option("--domain <name>", "Keystone domain of the user (default Default)")
    .option("--tenant <name>", "Keystone project to log in to (default: the user's default project)")
    .option("--password-stdin", "read the password from standard input")
    .option("--endpoints <file>", `tenantry's endpoints (default: the embedded default's ${ENDPOINTS_FILE})`)
    .option(
      "-o, --output <file>",
      "kubeconfig to write (default <clusters dir>/<cluster>/<user>.token.kubeconfig)",
    )
    .action(async (opts: LoginOptions) => {
      const endpoints = loadEndpoints(opts.endpoints);
      const password = await readPassword(opts.passwordStdin ?? false);
      if (!password) throw new UserError("no password given");
      const res = await post(endpoints, LOGIN_PATH, {
        username: opts.username,
        password,
        ...(opts.provider ? { provider: opts.provider } : {}),
        ...(opts.domain ? { domain: opts.domain } : {}),
        ...(opts.tenant ? { tenant: opts.tenant } : {}),
      });
      if (res.status === 401) throw new UserError(`login refused: ${problemDetail(res.body)}`, 3);
      if (res.status !== 200)
        throw new UserError(`login failed (HTTP ${res.status}): ${problemDetail(res.body)}`, 1);
      const answer = JSON.parse(res.body) as LoginAnswer;
      const file =
        opts.output ??
        join(
          opts.endpoints ? dirname(opts.endpoints) : join(defaultClustersDir(), endpoints.cluster),
          `${answer.username.replace(/[^\w.@-]/g, "_")}.token.kubeconfig`,
        );
      await writeFile(file, tokenKubeconfigText(endpoints, answer, opts.direct), { mode: 0o600 });
      const where = answer.tenant
        ? `tenant "${answer.tenant}" as ${answer.tenantAdmin ? "admin" : "member"}${
            answer.namespaces.length ? `, namespaces ${answer.namespaces.join(", ")}` : ""
          }`
        : "no tenant";
      process.stdout.write(
        [
          `logged in as ${answer.username} (${answer.provider}): ${where}`,
          `token expires ${answer.expiresAt}`,
          `kubeconfig: ${file} (${!opts.direct && endpoints.gateway ? `through the tenant gateway ${endpoints.gateway.url}` : `kube-apiserver ${endpoints.apiServer}`})`,
          `try: kubectl --kubeconfig ${file} get pods`,
          "",
        ].join("\n"),
      );
    });

  program
    .command("logout")
    .description("revoke the token of a kubeconfig written by `tenantry login`")
    .argument("<kubeconfig>", "the kubeconfig file")
    .option("--endpoints <file>", `tenantry's endpoints (default: the embedded default's ${ENDPOINTS_FILE})`)
    .action(async (file: string, opts: { endpoints?: string }) => {
      if (!existsSync(file)) throw new UserError(`${file}: no such file`);
      const { parse } = await import("yaml");
      const config = parse(readFileSync(file, "utf8")) as { users?: { user?: { token?: string } }[] };
      const token = config.users?.find((u) => u.user?.token)?.user?.token;
      if (!token) throw new UserError(`${file} holds no token`);
      const res = await post(loadEndpoints(opts.endpoints), LOGOUT_PATH, undefined, token);
      if (res.status !== 204)
        throw new UserError(`logout failed (HTTP ${res.status}): ${problemDetail(res.body)}`, 1);
      process.stdout.write("token revoked\n");
    });
}
