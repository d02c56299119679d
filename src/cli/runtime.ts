/**
 * `tenantry runtime start|status|stop|delete|list|logs`: the runtimes Admin API from a terminal,
 * authenticated with the token `tenantry login` wrote (or --token / TENANTRY_TOKEN).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { Command } from "commander";
import { decodeJwt } from "jose";
import { ENDPOINTS_FILE, type TenantryEndpoints } from "../app/index.js";
import { createProgress, defaultClustersDir, UserError } from "../common/index.js";
import { ClusterClient } from "../kube/index.js";
import type { RuntimeStatusBody } from "../runtimes/index.js";
import { EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";
import { registerBackupCommands } from "./runtime-backup.js";

interface RuntimeOptions {
  url?: string;
  endpoints?: string;
  token?: string;
  kubeconfig?: string;
  user?: string;
  output: OutputFormat;
}

interface Problem {
  status: number;
  detail?: string;
  field?: string;
  limit?: string | number;
}

export interface AdminConnection {
  url: string;
  token: string;
  user: string;
  kubeconfig?: KubeConfig;
}

/** Where the Admin API is, who calls it, and as which user. */
export function adminConnection(opts: Omit<RuntimeOptions, "output">): AdminConnection {
  let kubeconfig: KubeConfig | undefined;
  if (opts.kubeconfig) {
    if (!existsSync(opts.kubeconfig)) throw new UserError(`--kubeconfig ${opts.kubeconfig}: no such file`);
    kubeconfig = new KubeConfig();
    kubeconfig.loadFromFile(opts.kubeconfig);
  }
  const token = opts.token ?? process.env.TENANTRY_TOKEN ?? kubeconfig?.getCurrentUser()?.token;
  if (!token) {
    throw new UserError(
      "no token: run `tenantry login` and pass its --kubeconfig, or give --token / TENANTRY_TOKEN",
    );
  }
  let url = opts.url;
  if (!url) {
    const file = opts.endpoints ?? join(defaultClustersDir(), "home", ENDPOINTS_FILE);
    if (!existsSync(file)) {
      throw new UserError(
        `no tenantry endpoints at ${file}: give --url of the runtimes Admin API or --endpoints`,
      );
    }
    const endpoints = JSON.parse(readFileSync(file, "utf8")) as TenantryEndpoints & {
      runtimesProxyUrl?: string;
    };
    url = endpoints.runtimesProxyUrl ?? endpoints.runtimesAdminUrl;
    if (!url) throw new UserError(`${file} names no runtimes Admin API: give --url`);
  }
  const user = opts.user ?? userOfToken(token) ?? kubeconfig?.getCurrentUser()?.name;
  if (!user) throw new UserError("cannot tell the user from the token: give --user");
  return { url: url.replace(/\/+$/, ""), token, user, ...(kubeconfig ? { kubeconfig } : {}) };
}

function userOfToken(token: string): string | undefined {
  try {
    const claims = decodeJwt(token);
    return (claims.preferred_username as string | undefined) ?? claims.sub;
  } catch {
    return undefined;
  }
}

/** One Admin API call; a problem answer becomes the CLI's exit code (2 bad input, 3 not found, 4 conflict). */
async function request(
  conn: AdminConnection,
  method: string,
  path: string,
  body?: unknown,
  accept: number[] = [],
): Promise<{ status: number; body: unknown; headers: Headers }> {
  let res: Response;
  try {
    res = await fetch(`${conn.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${conn.token}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new UserError(
      `cannot reach the runtimes Admin API at ${conn.url}: ${(err as Error).message}`,
      EXIT.failure,
    );
  }
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  if (res.ok || accept.includes(res.status))
    return { status: res.status, body: parsed, headers: res.headers };
  const problem = (parsed ?? {}) as Problem;
  const detail = `${problem.detail ?? `HTTP ${res.status}`}${problem.field ? ` (field ${problem.field}${problem.limit !== undefined ? `, limit ${problem.limit}` : ""})` : ""}`;
  if (res.status === 404) throw new UserError(detail, EXIT.notFound);
  if (res.status === 409) throw new UserError(detail, EXIT.exists);
  if (res.status === 400 || res.status === 401 || res.status === 403)
    throw new UserError(detail, EXIT.badInput);
  const retry = res.headers.get("retry-after");
  throw new UserError(`${detail}${retry ? ` (retry after ${retry}s)` : ""}`, EXIT.failure);
}

const instancePath = (conn: AdminConnection, service: string, instance: string) =>
  `/services/${encodeURIComponent(conn.user)}/${service}/${instance}`;

/** Follows the progress stream until the runtime is ready (its status) or failed (an error). */
async function followProgress(conn: AdminConnection, path: string, quiet: boolean): Promise<void> {
  const res = await fetch(`${conn.url}${path}/progress`, {
    headers: { authorization: `Bearer ${conn.token}` },
  });
  if (!res.ok || !res.body) throw new UserError(`progress stream answered HTTP ${res.status}`, EXIT.failure);
  const progress = quiet ? undefined : createProgress("starting");
  const decoder = new TextDecoder();
  let buffer = "";
  let outcome: { ready: boolean; failed?: boolean; message?: string; url?: string } | undefined;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n");
      if (!data) continue;
      const event = JSON.parse(data) as {
        progress: number;
        message?: string;
        ready: boolean;
        failed?: boolean;
        url?: string;
      };
      progress?.update(event.progress, 100, event.message ?? "");
      outcome = event;
    }
  }
  if (!outcome?.ready) {
    throw new UserError(
      `the runtime did not start: ${outcome?.message ?? "the progress stream ended"}`,
      EXIT.failure,
    );
  }
  progress?.finish(`ready at ${outcome.url ?? "(no URL)"}`);
}

/**
 * Starts (or resumes) a runtime; with `wait`, follows its progress (on stderr unless `quiet`) until
 * it answers, and fails with the runtime's message when it does not.
 */
export async function startRuntime(
  conn: AdminConnection,
  service: string,
  instance: string,
  params: Record<string, unknown>,
  options: { wait: boolean; quiet: boolean },
): Promise<RuntimeStatusBody> {
  const path = instancePath(conn, service, instance);
  const started = await request(conn, "POST", path, params);
  if (started.status !== 202 || !options.wait) return started.body as RuntimeStatusBody;
  await followProgress(conn, path, options.quiet);
  return statusOfAnswer(await request(conn, "GET", path, undefined, [503]));
}

/** A GET's status: the body of a 200, the `runtime` member of a 503 problem. */
function statusOfAnswer(answer: { status: number; body: unknown }): RuntimeStatusBody {
  if (answer.status === 503) return (answer.body as { runtime: RuntimeStatusBody }).runtime;
  return answer.body as RuntimeStatusBody;
}

function describe(status: RuntimeStatusBody): string {
  return [
    `${status.user}/${status.service}/${status.instance}: ${status.phase}${status.reason ? ` (${status.reason})` : ""}${status.ready ? ", ready" : ""}`,
    ...(status.message ? [`  ${status.message}`] : []),
    ...(status.url ? [`  url: ${status.url}`] : []),
    `  object: runtime ${status.namespace}/${status.name}${status.cluster ? ` in cluster ${status.cluster}` : ""}`,
    `  steps: ${status.steps.map((s) => `${s.name} ${s.state}`).join(", ")}`,
  ].join("\n");
}

function parseParams(pairs: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new UserError(`--set "${pair}" must be name=value`);
    const raw = pair.slice(at + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Not JSON: a plain string.
    }
    body[pair.slice(0, at)] = value;
  }
  return body;
}

function withConnection(command: Command): Command {
  return command
    .option("--url <url>", "the runtimes Admin API (default: from the embedded default's endpoints)")
    .option("--endpoints <file>", `tenantry's endpoints (default: the embedded default's ${ENDPOINTS_FILE})`)
    .option("--kubeconfig <file>", "kubeconfig `tenantry login` wrote: its token is used")
    .option("--token <token>", "bearer token (default: TENANTRY_TOKEN, else the kubeconfig's)")
    .option("--user <name>", "whose runtimes (default: the token's user)")
    .option("-o, --output <format>", "text, json or yaml", "text");
}

function registerRuntimeStart(runtime: Command): void {
  withConnection(
    runtime
      .command("start")
      .description("start (or resume) a runtime and show its progress until it answers")
      .argument("<service>", "the RuntimeService")
      .argument("<instance>", "the instance name")
      .option(
        "--set <name=value>",
        "a plugin parameter (JSON values allowed), repeatable",
        (v, p: string[] = []) => [...p, v],
      )
      .option("--no-wait", "answer at once instead of following the start"),
  ).action(
    async (service: string, instance: string, opts: RuntimeOptions & { set?: string[]; wait: boolean }) => {
      const status = await startRuntime(
        adminConnection(opts),
        service,
        instance,
        parseParams(opts.set ?? []),
        {
          wait: opts.wait,
          quiet: opts.output !== "text",
        },
      );
      printResult(status, opts.output, () => describe(status));
    },
  );
}

function registerRuntimeLogs(runtime: Command): void {
  withConnection(
    runtime
      .command("logs")
      .description("the log of a runtime's pod, through the Kubernetes API")
      .argument("<service>")
      .argument("<instance>")
      .option("--container <name>", "container of the pod (default: its only one)")
      .option("--tail <lines>", "last lines only"),
  ).action(
    async (
      service: string,
      instance: string,
      opts: RuntimeOptions & { container?: string; tail?: string },
    ) => {
      const conn = adminConnection(opts);
      if (!conn.kubeconfig)
        throw new UserError("logs are read through the Kubernetes API: give --kubeconfig");
      const answer = await request(conn, "GET", instancePath(conn, service, instance), undefined, [503]);
      const status = statusOfAnswer(answer);
      const pod = status.pod;
      if (!pod) throw new UserError(`${service}/${instance} has no pod (it is not running)`, EXIT.notFound);
      const client = new ClusterClient("runtime", conn.kubeconfig);
      const log = await client.core.readNamespacedPodLog({
        name: pod,
        namespace: status.namespace,
        ...(opts.container ? { container: opts.container } : {}),
        ...(opts.tail ? { tailLines: Number(opts.tail) } : {}),
      });
      process.stdout.write(log);
    },
  );
}

export function registerRuntimeCommands(program: Command): void {
  const runtime = program
    .command("runtime")
    .description("per-user runtimes: start, watch, stop, delete, back up, restore");
  registerBackupCommands(runtime);

  registerRuntimeStart(runtime);

  withConnection(
    runtime.command("status").description("a runtime's state").argument("<service>").argument("<instance>"),
  ).action(async (service: string, instance: string, opts: RuntimeOptions) => {
    const conn = adminConnection(opts);
    const answer = await request(conn, "GET", instancePath(conn, service, instance), undefined, [503]);
    const status = statusOfAnswer(answer);
    printResult(status, opts.output, () => describe(status));
  });

  withConnection(
    runtime
      .command("stop")
      .description("stop a runtime: its deployment and service go, volumes and secrets stay")
      .argument("<service>")
      .argument("<instance>"),
  ).action(async (service: string, instance: string, opts: RuntimeOptions) => {
    const conn = adminConnection(opts);
    const answer = await request(conn, "DELETE", `${instancePath(conn, service, instance)}/stop`);
    const status = (answer.body ?? { service, instance, phase: "Stopped" }) as RuntimeStatusBody;
    printResult(
      status,
      opts.output,
      () => `${service}/${instance}: ${answer.status === 204 ? "stopped" : "stopping"}`,
    );
  });

  withConnection(
    runtime
      .command("delete")
      .description("delete a runtime with its volumes and secrets")
      .argument("<service>")
      .argument("<instance>"),
  ).action(async (service: string, instance: string, opts: RuntimeOptions) => {
    const conn = adminConnection(opts);
    const answer = await request(conn, "DELETE", instancePath(conn, service, instance));
    printResult(answer.body, opts.output, () => `${service}/${instance}: deleting`);
  });

  withConnection(
    runtime
      .command("list")
      .description("the user's runtimes (--all: every user's, with the delegation permission)")
      .option("--all", "every user's runtimes")
      .option("--limit <n>", "page size the Admin API is asked for", "100"),
  ).action(async (opts: RuntimeOptions & { all?: boolean; limit: string }) => {
    const conn = adminConnection(opts);
    const items: RuntimeStatusBody[] = [];
    let next: string | undefined;
    do {
      const query = `?limit=${encodeURIComponent(opts.limit)}${next ? `&continue=${encodeURIComponent(next)}` : ""}`;
      const page = (
        await request(
          conn,
          "GET",
          `${opts.all ? "/services" : `/services/${encodeURIComponent(conn.user)}`}${query}`,
        )
      ).body as { items: RuntimeStatusBody[]; continue?: string };
      items.push(...page.items);
      next = page.continue;
    } while (next);
    printResult({ items }, opts.output, () =>
      items.length === 0
        ? "no runtimes"
        : columns([
            ["USER", "SERVICE", "INSTANCE", "PHASE", "READY", "URL"],
            ...items.map((i) => [i.user, i.service, i.instance, i.phase, String(i.ready), i.url ?? ""]),
          ]).join("\n"),
    );
  });

  registerRuntimeLogs(runtime);
  registerRuntimeShare(runtime);
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `runtime share`: who besides its user the runtimes proxy lets into a runtime (its `spec.access`). */
function registerRuntimeShare(runtime: Command): void {
  withConnection(
    runtime
      .command("share")
      .description(
        "share a runtime through the runtimes proxy with users and groups (replacing whom it was shared with); without options, show them",
      )
      .argument("<service>")
      .argument("<instance>")
      .option("--with <user>", "a user to share it with (repeatable)", collect, [])
      .option("--with-group <group>", "a group whose members may use it (repeatable)", collect, [])
      .option("--none", "share it with nobody"),
  ).action(
    async (
      service: string,
      instance: string,
      opts: RuntimeOptions & { with: string[]; withGroup: string[]; none?: boolean },
    ) => {
      const conn = adminConnection(opts);
      const path = `${instancePath(conn, service, instance)}/access`;
      const change = opts.none || opts.with.length > 0 || opts.withGroup.length > 0;
      if (opts.none && (opts.with.length > 0 || opts.withGroup.length > 0)) {
        throw new UserError(
          "--none shares with nobody: give it without --with or --with-group",
          EXIT.badInput,
        );
      }
      const answer = change
        ? await request(conn, "PUT", path, { users: opts.with, groups: opts.withGroup })
        : await request(conn, "GET", path);
      const access = answer.body as { users: string[]; groups: string[] };
      printResult(access, opts.output, () =>
        access.users.length === 0 && access.groups.length === 0
          ? `${service}/${instance}: shared with nobody`
          : `${service}/${instance}: shared with${access.users.length ? ` users ${access.users.join(", ")}` : ""}${access.groups.length ? `${access.users.length ? ";" : ""} groups ${access.groups.join(", ")}` : ""}`,
      );
    },
  );
}
