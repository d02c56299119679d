/**
 * `tenantry cloud create|instantiate|status|kubeconfig|terminate|delete|list`: logical clouds from
 * a terminal, through the DCM-compatible REST API (its URL and CA from tenantry.json), as the
 * kubeconfig's user (its client certificate or token) — the cluster administrator by default.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { TenantryEndpoints } from "../app/index.js";
import { ENDPOINTS_FILE } from "../app/index.js";
import {
  cloudFromBody,
  FieldError,
  permissionFromBody,
  quotaFromBody,
  referenceFromBody,
} from "../clouds/index.js";
import { createProgress, defaultClustersDir, pollUntil, UserError } from "../common/index.js";
import { loadKubeConfig, resolveKubeconfig } from "./kube-context.js";
import { collect, EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

interface Connection {
  url: string;
  ca?: string;
  cert?: string;
  key?: string;
  token?: string;
}

interface Answer {
  status: number;
  body: unknown;
  text: string;
}

interface StatusAnswer {
  state: string;
  status: string;
  deployedStatus?: string;
  message?: string;
  states: { actions: { state: string; instance: string; time: string }[] };
  clusters?: {
    cluster: string;
    clusterProvider: string;
    connectivity: string;
    state: string;
    reason?: string;
    message?: string;
    applyMs?: number;
  }[];
}

/** Where the API is and who calls it: --url/--ca-file or tenantry.json; the kubeconfig's credentials or --token. */
function connection(command: Command): Connection {
  const opts = command.optsWithGlobals<{
    url?: string;
    caFile?: string;
    endpoints?: string;
    kubeconfig?: string;
    token?: string;
  }>();
  let url = opts.url;
  let ca = opts.caFile ? readFileSync(opts.caFile, "utf8") : undefined;
  if (!url) {
    const file = opts.endpoints ?? join(defaultClustersDir(), "home", ENDPOINTS_FILE);
    if (!existsSync(file)) {
      throw new UserError(
        `no tenantry endpoints at ${file}: give --url of the logical-clouds API (and --ca-file) or --endpoints`,
      );
    }
    const endpoints = JSON.parse(readFileSync(file, "utf8")) as TenantryEndpoints;
    if (!endpoints.logicalCloudsUrl) throw new UserError(`${file} names no logical-clouds API: give --url`);
    url = endpoints.logicalCloudsUrl;
    ca ??= endpoints.logicalCloudsCaPem;
  }
  const token = opts.token ?? process.env.TENANTRY_TOKEN;
  if (token) return { url: url.replace(/\/+$/, ""), ...(ca ? { ca } : {}), token };
  const kc = loadKubeConfig(resolveKubeconfig(opts.kubeconfig));
  const user = kc.getCurrentUser();
  const decode = (data?: string, file?: string) =>
    data ? Buffer.from(data, "base64").toString() : file ? readFileSync(file, "utf8") : undefined;
  const cert = decode(user?.certData, user?.certFile);
  const key = decode(user?.keyData, user?.keyFile);
  if (!user?.token && !(cert && key)) {
    throw new UserError(
      "the kubeconfig's user has neither a client certificate nor a token: give --token or another --kubeconfig",
    );
  }
  return {
    url: url.replace(/\/+$/, ""),
    ...(ca ? { ca } : {}),
    ...(user?.token ? { token: user.token } : { cert: cert!, key: key! }),
  };
}

function call(conn: Connection, method: string, path: string, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${conn.url}${path}`,
      {
        method,
        ...(conn.ca ? { ca: conn.ca } : {}),
        ...(conn.cert ? { cert: conn.cert, key: conn.key } : {}),
        headers: {
          ...(payload !== undefined ? { "content-type": "application/json" } : {}),
          ...(conn.token ? { authorization: `Bearer ${conn.token}` } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          let parsed: unknown = text;
          if ((res.headers["content-type"] ?? "").includes("json") && text) {
            try {
              parsed = JSON.parse(text);
            } catch {}
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
      },
    );
    req.on("error", (err) =>
      reject(
        new UserError(`cannot reach the logical-clouds API at ${conn.url}: ${err.message}`, EXIT.failure),
      ),
    );
    req.end(payload);
  });
}

/** A call whose failure becomes the CLI's exit code (2 bad input, 3 not found, 4 conflict). */
async function api(
  conn: Connection,
  method: string,
  path: string,
  body?: unknown,
  accept: number[] = [],
): Promise<Answer> {
  const answer = await call(conn, method, path, body);
  if ((answer.status >= 200 && answer.status < 300) || accept.includes(answer.status)) return answer;
  const problem = (typeof answer.body === "object" ? answer.body : {}) as { detail?: string; field?: string };
  const detail = `${problem.detail ?? (answer.text || `HTTP ${answer.status}`)}`;
  if (answer.status === 404) throw new UserError(detail, EXIT.notFound);
  if (answer.status === 409) throw new UserError(detail, EXIT.exists);
  if ([400, 401, 403, 422].includes(answer.status)) throw new UserError(detail, EXIT.badInput);
  throw new UserError(`${detail} (HTTP ${answer.status})`, EXIT.failure);
}

const cloudPath = (project: string, cloud: string) =>
  `/v2/projects/${encodeURIComponent(project)}/logical-clouds/${encodeURIComponent(cloud)}`;

/** kubectl's set-based selector syntax, one requirement per comma: `k=v`, `k!=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`. */
type SelectorOperator = "In" | "NotIn" | "Exists" | "DoesNotExist";

export function parseSelector(text: string): {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: SelectorOperator; values?: string[] }[];
} {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: { key: string; operator: SelectorOperator; values?: string[] }[] = [];
  const parts = text.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  const forms: [RegExp, (m: RegExpExecArray) => void][] = [
    [
      /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/,
      (m) =>
        matchExpressions.push({
          key: m[1]!,
          operator: m[2] === "in" ? "In" : "NotIn",
          values: m[3]!
            .split(",")
            .map((v) => v.trim())
            .filter(Boolean),
        }),
    ],
    [
      /^([^\s!=]+)\s*!=\s*(\S*)$/,
      (m) => matchExpressions.push({ key: m[1]!, operator: "NotIn", values: [m[2]!] }),
    ],
    [
      /^([^\s!=]+)\s*==?\s*(\S*)$/,
      (m) => {
        matchLabels[m[1]!] = m[2]!;
      },
    ],
    [/^!\s*([^\s!=]+)$/, (m) => matchExpressions.push({ key: m[1]!, operator: "DoesNotExist" })],
    [/^([^\s!=()]+)$/, (m) => matchExpressions.push({ key: m[1]!, operator: "Exists" })],
  ];
  for (const raw of parts.map((p) => p.trim()).filter(Boolean)) {
    const form = forms.find(([re]) => re.test(raw));
    if (!form) {
      throw new UserError(
        `--selector "${text}": "${raw}" is not a requirement (k=v, k!=v, k in (a,b), k notin (a,b), k, !k)`,
      );
    }
    form[1](form[0].exec(raw)!);
  }
  if (Object.keys(matchLabels).length === 0 && matchExpressions.length === 0) {
    throw new UserError(`--selector "${text}" names no requirement`);
  }
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}

/** `name:verb,verb:resource,resource[:group,group][@namespace]`; no `@`: the cloud's namespace; `@*`: cluster-wide. */
export function parsePermission(text: string, namespace: string) {
  const [spec, where] = text.split("@") as [string, string | undefined];
  const [name, verbs, resources, groups] = spec.split(":");
  if (!name || !verbs || !resources) {
    throw new UserError(
      `--permission "${text}" must be name:verbs:resources[:apiGroups][@namespace], e.g. dev:get,list,create:pods,deployments:,apps`,
    );
  }
  const list = (v: string) => v.split(",").map((x) => x.trim());
  return {
    metadata: { name },
    spec: {
      namespace: where === undefined ? namespace : where === "*" ? "" : where,
      verbs: list(verbs),
      resources: list(resources),
      apiGroups: groups === undefined ? [""] : list(groups),
    },
  };
}

function parseQuota(text: string): Record<string, string> {
  const quota: Record<string, string> = {};
  for (const part of text.split(",").filter(Boolean)) {
    const [k, v] = part.split("=");
    if (!k || v === undefined)
      throw new UserError(`--quota "${part}" must be resource=quantity, e.g. limits.cpu=8,pods=50`);
    quota[k] = v;
  }
  return quota;
}

function clusterLine(c: NonNullable<StatusAnswer["clusters"]>[number]): string {
  const took = c.applyMs !== undefined && c.state === "Ready" ? ` in ${(c.applyMs / 1000).toFixed(2)}s` : "";
  return `  ${c.cluster}: ${c.state}${took}${c.reason ? ` ${c.reason}` : ""}${c.message && c.state !== "Ready" ? `: ${c.message}` : ""}`;
}

/**
 * Follows a lifecycle action in the status, a line per cluster as its state changes, until the
 * cloud reaches one of `done` (exit 0) or `failed` (exit 1), or the timeout.
 */
async function follow(
  conn: Connection,
  project: string,
  cloud: string,
  instance: string,
  verb: string,
  done: string[],
  failed: string[],
  timeoutS: number,
): Promise<StatusAnswer> {
  const progress = createProgress(`${verb} ${project}/${cloud}`);
  const seen = new Map<string, string>();
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const status = (
      await api(conn, "GET", `${cloudPath(project, cloud)}/status?status=deployed&output=detail`)
    ).body as StatusAnswer;
    const current = status.states.actions.some((a) => a.instance === instance);
    if (current) {
      for (const c of status.clusters ?? []) {
        const line = clusterLine(c);
        if (seen.get(c.cluster) !== `${c.state}/${c.reason ?? ""}`) {
          seen.set(c.cluster, `${c.state}/${c.reason ?? ""}`);
          progress.log(line);
        }
      }
      const clusters = status.clusters ?? [];
      const settled = clusters.filter((c) => ["Ready", "Removed", "Failed"].includes(c.state)).length;
      progress.update(settled, Math.max(clusters.length, 1), status.deployedStatus ?? "");
      if (done.includes(status.deployedStatus ?? "")) {
        progress.finish(status.deployedStatus!);
        return status;
      }
      if (failed.includes(status.deployedStatus ?? "")) {
        progress.finish(status.deployedStatus!);
        throw new UserError(
          `${project}/${cloud} ${status.deployedStatus}: ${status.message ?? ""}`,
          EXIT.failure,
        );
      }
    }
    if (Date.now() > deadline) {
      progress.finish(`still ${status.deployedStatus ?? "pending"}`);
      throw new UserError(
        `${project}/${cloud} is still ${status.deployedStatus ?? "pending"} after ${timeoutS}s: ${status.message ?? ""}`,
        EXIT.failure,
      );
    }
    await sleep(300);
  }
}

/** POSTs a lifecycle action and, unless --no-wait, follows it cluster by cluster to its end. */
async function runAction(
  command: Command,
  project: string,
  name: string,
  action: "instantiate" | "terminate",
  opts: { wait?: boolean; timeout?: number },
  body?: unknown,
): Promise<void> {
  const conn = connection(command);
  const answer = await api(conn, "POST", `${cloudPath(project, name)}/${action}`, body);
  const instance = (answer.body as { instance: string }).instance;
  if (!opts.wait) {
    process.stdout.write(`${action} of ${project}/${name} asked for (instance ${instance})\n`);
    return;
  }
  const [done, failed] =
    action === "instantiate" ? ["Instantiated", "InstantiateFailed"] : ["Terminated", "TerminateFailed"];
  const status = await follow(conn, project, name, instance, action, [done], [failed], opts.timeout ?? 300);
  process.stdout.write(`${statusText(project, name, status)}\n`);
}

function statusText(project: string, cloud: string, status: StatusAnswer): string {
  const rows = (status.clusters ?? []).map((c) => [
    c.cluster,
    c.clusterProvider,
    c.state,
    c.connectivity,
    c.applyMs === undefined ? "" : `${(c.applyMs / 1000).toFixed(2)}s`,
    [c.reason, c.message].filter(Boolean).join(": "),
  ]);
  return [
    `${project}/${cloud}: ${status.deployedStatus || status.state}${status.message ? ` — ${status.message}` : ""}`,
    ...(rows.length
      ? columns([["CLUSTER", "PROVIDER", "STATE", "CONNECTIVITY", "APPLIED IN", "REASON"], ...rows])
      : []),
  ].join("\n");
}

/** What `cloud create` writes: the cloud, then its cluster references, permissions and quota. */
interface CloudPlan {
  cloud: Record<string, unknown>;
  references: { body: Record<string, unknown>; flag: string }[];
  permissions: { body: Record<string, unknown>; flag: string }[];
  quota?: Record<string, unknown>;
}

function cloudPlan(name: string, opts: Record<string, unknown>): CloudPlan {
  const level = String(opts.level);
  const namespace = (opts.namespace as string | undefined) ?? name;
  const users = (opts.user as string[] | undefined) ?? [];
  if (level === "1" && users.length === 0)
    throw new UserError("--user: a level-1 logical cloud needs at least one user");
  const labels = Object.fromEntries(
    ((opts.label as string[] | undefined) ?? []).map((l) => {
      const eq = l.indexOf("=");
      if (eq <= 0) throw new UserError(`--label "${l}" must be key=value`);
      return [l.slice(0, eq), l.slice(eq + 1)];
    }),
  );
  const csr = opts.csr ? readFileSync(opts.csr as string, "utf8") : undefined;
  const [first, ...more] = users;
  const cloud = {
    metadata: { name, ...(opts.description ? { description: opts.description } : {}) },
    spec: {
      level,
      ...(level === "1"
        ? {
            namespace,
            ...(Object.keys(labels).length ? { labels } : {}),
            user: { userName: first, type: "certificate", ...(csr ? { certificateRequest: csr } : {}) },
            ...(more.length ? { users: more.map((u) => ({ userName: u, type: "certificate" })) } : {}),
          }
        : {}),
    },
  };
  const references = [
    ...((opts.cluster as string[] | undefined) ?? []).map((cluster) => ({
      body: { metadata: { name: cluster }, spec: { cluster } },
      flag: `--cluster ${cluster}`,
    })),
    ...((opts.selector as string[] | undefined) ?? []).map((selector, i) => ({
      body: { metadata: { name: `selector-${i + 1}` }, spec: { clusterSelector: parseSelector(selector) } },
      flag: `--selector ${selector}`,
    })),
  ];
  if (level !== "1") return { cloud, references, permissions: [] };
  const permissions = ((opts.permission as string[] | undefined) ?? []).map((p) => ({
    body: parsePermission(p, namespace) as Record<string, unknown>,
    flag: `--permission ${p}`,
  }));
  if (permissions.length === 0) {
    permissions.push({
      body: {
        metadata: { name: "default" },
        spec: { namespace, apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
      },
      flag: "--permission",
    });
  }
  return {
    cloud,
    references,
    permissions,
    ...(opts.quota ? { quota: { metadata: { name: "quota" }, spec: parseQuota(opts.quota as string) } } : {}),
  };
}

/** The API's own checks of each body, run here first: a refusal names the flag and the field. */
async function checkPlan(plan: CloudPlan): Promise<void> {
  const checked = async (flag: string, check: () => unknown) => {
    try {
      await check();
    } catch (err) {
      if (err instanceof FieldError) throw new UserError(`${flag}: ${err.message}`, EXIT.badInput);
      throw err;
    }
  };
  await checked("the cloud", () => cloudFromBody(plan.cloud));
  const seen = new Set<string>();
  for (const { body, flag } of plan.references) {
    await checked(flag, () => referenceFromBody(body));
    const refName = (body.metadata as { name: string }).name;
    if (seen.has(refName)) throw new UserError(`${flag}: named twice`, EXIT.badInput);
    seen.add(refName);
  }
  for (const { body, flag } of plan.permissions) await checked(flag, () => permissionFromBody(body));
  if (plan.quota) await checked("--quota", () => quotaFromBody(plan.quota));
}

/**
 * Writes the plan; when a step fails (the API knows what this side cannot, e.g. which clusters
 * are registered), removes what it made — the cloud, and the project if it made that too — so a
 * refused create leaves nothing behind.
 */
async function createCloud(conn: Connection, project: string, name: string, plan: CloudPlan): Promise<void> {
  const projectPath = `/v2/projects/${encodeURIComponent(project)}`;
  const path = cloudPath(project, name);
  const undo: { what: string; run: () => Promise<unknown> }[] = [];
  try {
    const found = await call(conn, "GET", projectPath);
    if (found.status === 404) {
      await api(conn, "POST", "/v2/projects", { metadata: { name: project } });
      undo.unshift({
        what: `project "${project}"`,
        run: () => api(conn, "DELETE", projectPath, undefined, [404]),
      });
      process.stderr.write(`project "${project}" created\n`);
    } else if (found.status !== 200) {
      await api(conn, "GET", projectPath);
    }
    await api(conn, "POST", `${projectPath}/logical-clouds`, plan.cloud);
    undo.unshift({ what: `logical cloud "${name}"`, run: () => deleteCloud(conn, path) });
    for (const { body } of plan.references) await api(conn, "POST", `${path}/cluster-references`, body);
    for (const { body } of plan.permissions) await api(conn, "POST", `${path}/user-permissions`, body);
    if (plan.quota) await api(conn, "POST", `${path}/cluster-quotas`, plan.quota);
  } catch (err) {
    for (const step of undo) {
      await step.run().then(
        () => process.stderr.write(`removed ${step.what} again\n`),
        (undoErr: Error) => process.stderr.write(`could not remove ${step.what}: ${undoErr.message}\n`),
      );
    }
    throw err;
  }
}

/** Deletes a never-instantiated cloud and waits until it is gone (its project can then go too). */
async function deleteCloud(conn: Connection, path: string): Promise<void> {
  await api(conn, "DELETE", path, undefined, [404]);
  const gone = await pollUntil(async () => (await call(conn, "GET", path)).status === 404 || undefined, {
    timeoutMs: 60_000,
    intervalMs: 300,
  });
  if (!gone) throw new Error(`${path} is still there a minute after its deletion`);
}

function registerCloudCreate(cloud: Command): void {
  cloud
    .command("create")
    .description(
      "create a logical cloud (and its project when new), its cluster references, permissions and quotas",
    )
    .argument("<project>", "project")
    .argument("<cloud>", "logical cloud")
    .option("--namespace <name>", "namespace to make on every cluster (default: the cloud's name)")
    .option("--user <name>", "a user, repeatable (the first is DCM's user)", collect)
    .option("--csr <file>", "the first user's own PEM certificate request (default: a key is made)")
    .option("--level <level>", '"1" standard (default) or "0" admin', "1")
    .option("--cluster <name>", "a registered cluster, repeatable", collect)
    .option(
      "--selector <selector>",
      "clusters by label, repeatable: k=v, k in (a,b), … (joins and leaves as labels change)",
      collect,
    )
    .option(
      "--permission <spec>",
      "name:verbs:resources[:apiGroups][@namespace], repeatable (default: all verbs on all resources in its namespace)",
      collect,
    )
    .option(
      "--quota <list>",
      "one quota for the namespace, e.g. limits.cpu=8,pods=50 (default: the documented defaults)",
    )
    .option("-l, --label <key=value>", "a label of the namespace, repeatable", collect)
    .option("--description <text>", "what it is for")
    .action(async (project: string, name: string, opts, command: Command) => {
      const plan = cloudPlan(name, opts);
      // Every part is checked as the API will check it before anything is written…
      await checkPlan(plan);
      const conn = connection(command);
      await createCloud(conn, project, name, plan);
      process.stdout.write(
        `logical cloud ${project}/${name} created: tenantry cloud instantiate ${project} ${name}\n`,
      );
    });
}

function registerCloudKubeconfig(cloud: Command): void {
  cloud
    .command("kubeconfig")
    .description(
      "one kubeconfig with a context per cluster (a user's certificates, or for level 0 the clusters' own credentials)",
    )
    .argument("<project>")
    .argument("<cloud>")
    .option("--user <name>", "whose (default the cloud's first user)")
    .option("--reference <name>", "only the clusters of this cluster reference (DCM's per-cluster download)")
    .option("-o, --output <file>", "write it there (default: print it)")
    .action(async (project: string, name: string, opts, command: Command) => {
      const query = opts.user ? `?user=${encodeURIComponent(opts.user as string)}` : "";
      const path = opts.reference
        ? `${cloudPath(project, name)}/cluster-references/${encodeURIComponent(opts.reference as string)}/kubeconfig${query}`
        : `${cloudPath(project, name)}/kubeconfig${query}`;
      const text = (await api(connection(command), "GET", path)).text;
      if (opts.output) {
        writeFileSync(opts.output as string, text, { mode: 0o600 });
        process.stderr.write(`kubeconfig written to ${opts.output}\n`);
      } else process.stdout.write(text);
    });
}

export function registerCloudCommands(program: Command): void {
  const cloud = program
    .command("cloud")
    .description(
      "logical clouds: one namespace, quota, users and permissions on every cluster chosen by name or label",
    );
  cloud
    .option(
      "--kubeconfig <path>",
      "whose credentials to call with (default $KUBECONFIG, else the embedded home cluster's admin)",
    )
    .option("--token <token>", "a bearer token instead (or TENANTRY_TOKEN)")
    .option("--url <url>", "the logical-clouds API (default: logicalCloudsUrl in tenantry.json)")
    .option("--ca-file <file>", "CA of the API's certificate (default: from tenantry.json)")
    .option("--endpoints <file>", "tenantry.json to read (default: the embedded home cluster's)");

  registerCloudCreate(cloud);

  cloud
    .command("instantiate")
    .description("configure it on every selected cluster, showing each cluster's progress")
    .argument("<project>")
    .argument("<cloud>")
    .option(
      "--on-failure <policy>",
      "rollback (default): undo every cluster if one fails; keep: leave the others and retry it",
      "rollback",
    )
    .option("--no-wait", "return once it is asked for")
    .option("--timeout <seconds>", "how long to wait", (v) => Number(v), 300)
    .action((project: string, name: string, opts, command: Command) =>
      runAction(command, project, name, "instantiate", opts, { onFailure: opts.onFailure }),
    );

  cloud
    .command("status")
    .description("where it stands on each cluster")
    .argument("<project>")
    .argument("<cloud>")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (project: string, name: string, opts, command: Command) => {
      const status = (
        await api(
          connection(command),
          "GET",
          `${cloudPath(project, name)}/status?status=deployed&output=detail`,
        )
      ).body as StatusAnswer;
      printResult(status, opts.output as OutputFormat, () => statusText(project, name, status));
    });

  registerCloudKubeconfig(cloud);

  cloud
    .command("terminate")
    .description("remove it from every cluster (its users' access with it), showing each cluster's progress")
    .argument("<project>")
    .argument("<cloud>")
    .option("--no-wait", "return once it is asked for")
    .option("--timeout <seconds>", "how long to wait", (v) => Number(v), 300)
    .action((project: string, name: string, opts, command: Command) =>
      runAction(command, project, name, "terminate", opts),
    );

  cloud
    .command("delete")
    .description("delete a terminated (or never instantiated) logical cloud")
    .argument("<project>")
    .argument("<cloud>")
    .action(async (project: string, name: string, _opts, command: Command) => {
      await api(connection(command), "DELETE", cloudPath(project, name));
      process.stdout.write(`logical cloud ${project}/${name} deleted\n`);
    });

  cloud
    .command("list")
    .description("a project's logical clouds")
    .argument("<project>")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (project: string, opts, command: Command) => {
      const conn = connection(command);
      const clouds = (await api(conn, "GET", `/v2/projects/${encodeURIComponent(project)}/logical-clouds`))
        .body as {
        metadata: { name: string };
        spec: { namespace?: string; level?: string };
      }[];
      const rows: { name: string; level: string; namespace: string; state: string }[] = [];
      for (const c of clouds) {
        const status = (
          await api(
            conn,
            "GET",
            `${cloudPath(project, c.metadata.name)}/status?status=deployed&output=summary`,
          )
        ).body as StatusAnswer;
        rows.push({
          name: c.metadata.name,
          level: c.spec.level ?? "1",
          namespace: c.spec.namespace ?? "",
          state: status.deployedStatus || status.state,
        });
      }
      printResult(rows, opts.output as OutputFormat, () =>
        rows.length
          ? columns([
              ["NAME", "LEVEL", "NAMESPACE", "STATE"],
              ...rows.map((r) => [r.name, r.level, r.namespace, r.state]),
            ]).join("\n")
          : `project "${project}" has no logical clouds`,
      );
    });
}
