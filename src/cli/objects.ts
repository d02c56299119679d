/**
 * What every command over tenantry's custom objects shares: exit codes, how an API server's
 * refusal is reported, flag parsers, and the `create`/`list`/`get`/`delete` commands of a kind —
 * `-o text|json|yaml` everywhere, the object checked against its CRD's schema before anything is
 * sent (errors name the flag and the field), then by the API server itself in a dry run or for real.
 */
import { readFileSync } from "node:fs";
import { CustomObjectsApi, type KubernetesObject } from "@kubernetes/client-node";
import type { Command } from "commander";
import { parseAllDocuments } from "yaml";
import { type CustomResourceDefinition, crdValidator, type FieldViolation } from "../apis/index.js";
import { parseQuantity, UserError } from "../common/index.js";
import { describeError, statusCode, statusOf, statusReason } from "../kube/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { columns, type OutputFormat, printResult } from "./output.js";

/** Exit codes a script can rely on. */
export const EXIT = { ok: 0, failure: 1, badInput: 2, notFound: 3, exists: 4 } as const;

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** An API server refusal as the CLI reports it: its message (which names the field) and an exit code. */
export function apiFailure(err: unknown, what: string): never {
  const code = statusCode(err);
  const message = statusOf(err)?.message ?? describeError(err);
  if (code === 404) throw new UserError(`${what} not found`, EXIT.notFound);
  if (code === 409 && statusReason(err) === "AlreadyExists")
    throw new UserError(`${what} already exists`, EXIT.exists);
  if (code === 400 || code === 403 || code === 409 || code === 422)
    throw new UserError(message, EXIT.badInput);
  throw new UserError(`${what}: ${message}`, EXIT.failure);
}

/** `pods=20,requests.cpu=4` → a resource list; every value must be a quantity. */
export function parseResourceList(text: string, flag: string): Record<string, string> {
  const list: Record<string, string> = {};
  for (const part of text.split(",").filter(Boolean)) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq);
    if (eq <= 0) throw new UserError(`${flag} "${part}" must be name=quantity, e.g. pods=20,requests.cpu=4`);
    try {
      parseQuantity(part.slice(eq + 1));
    } catch (err) {
      throw new UserError(`${flag} ${name}: ${(err as Error).message}`, EXIT.badInput);
    }
    list[name] = part.slice(eq + 1);
  }
  return list;
}

/** `key=value` (one flag use) → [key, value]. */
export function keyValue(text: string, flag: string): [string, string] {
  const eq = text.indexOf("=");
  if (eq <= 0) throw new UserError(`${flag} "${text}" must be key=value`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** A whole number within bounds, named by its flag when it is not. */
export function integer(text: string, flag: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new UserError(`${flag} must be a whole number from ${min} to ${max}, got "${text}"`);
  return value;
}

/** The YAML or JSON documents of a file (`-` for stdin), empty ones dropped. */
export function readDocuments(file: string): unknown[] {
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  const documents = parseAllDocuments(text);
  const values: unknown[] = [];
  for (const [i, doc] of documents.entries()) {
    if (doc.errors.length) throw new UserError(`${file}: document ${i + 1}: ${doc.errors[0]!.message}`);
    const value = doc.toJS();
    if (value !== null && value !== undefined) values.push(value);
  }
  return values;
}

/** `5s`, `3m`, `2h`, `4d` since the object was made, as kubectl shows ages. */
export function age(object: KubernetesObject, now = Date.now()): string {
  const created = Date.parse(String(object.metadata?.creationTimestamp));
  if (Number.isNaN(created)) return "";
  const s = Math.max(0, Math.round((now - created) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** The Ready condition's status, or `Unknown` before the controller has written one. */
export function readyOf(object: { status?: { conditions?: { type: string; status: string }[] } }): string {
  return object.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "Unknown";
}

/** One custom resource kind as the CLI handles it. */
export interface ObjectKind<T extends KubernetesObject> {
  crd: CustomResourceDefinition;
  /** What people call it in messages: `access grant`, `volume pool`. */
  noun: string;
  /** List columns: header and cell. */
  columns: [string, (object: T) => string][];
  /** `get`'s text: the object in a few lines (default: the list row). */
  describe?(object: T): string;
  /** Flag names of spec fields, so an error names what the user typed: `spec.tenant` → `--tenant`. */
  flags?: Record<string, string>;
}

interface Coordinates {
  group: string;
  version: string;
  plural: string;
}

function coordinatesOf(crd: CustomResourceDefinition): Coordinates {
  return { group: crd.spec.group, version: crd.spec.versions[0]!.name, plural: crd.spec.names.plural };
}

function isNamespaced(kind: { crd: CustomResourceDefinition }): boolean {
  return kind.crd.spec.scope === "Namespaced";
}

export function objectsApi(command: Command): CustomObjectsApi {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  return loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
}

/** `-n`, else the kubeconfig context's namespace, else `default` (as kubectl chooses). */
export function namespaceOf(command: Command): string {
  const { kubeconfig, namespace } = command.optsWithGlobals<{ kubeconfig?: string; namespace?: string }>();
  if (namespace) return namespace;
  const kc = loadKubeConfig(kubeconfig);
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
}

function label<T extends KubernetesObject>(kind: ObjectKind<T>, name: string, namespace?: string): string {
  return `${kind.noun} "${name}"${namespace ? ` in namespace "${namespace}"` : ""}`;
}

const validators = new WeakMap<CustomResourceDefinition, (value: unknown) => FieldViolation[]>();

/** Schema violations of `object` against its CRD, each naming the flag that set the field when there is one. */
export function violationsOf<T extends KubernetesObject>(kind: ObjectKind<T>, object: T): string[] {
  let validate = validators.get(kind.crd);
  if (!validate) {
    validate = crdValidator(kind.crd);
    validators.set(kind.crd, validate);
  }
  return validate(object).map((v) => {
    const flag = Object.entries(kind.flags ?? {}).find(
      ([field]) => v.field === field || v.field.startsWith(`${field}.`) || v.field.startsWith(`${field}[`),
    )?.[1];
    return `${flag ? `${flag} (${v.field})` : v.field}: ${v.message}`;
  });
}

/**
 * Creates `object` after checking it against its CRD's schema; with `dryRun` the API server checks
 * it too (CEL rules, admission) and stores nothing. Prints `<kind>/<name> created` or the object.
 */
export async function createObject<T extends KubernetesObject>(
  command: Command,
  kind: ObjectKind<T>,
  object: T,
  opts: { dryRun?: boolean; output?: string },
): Promise<T> {
  const violations = violationsOf(kind, object);
  if (violations.length) throw new UserError(violations.join("; "), EXIT.badInput);
  const api = objectsApi(command);
  const name = object.metadata!.name!;
  const namespace = object.metadata?.namespace;
  const dryRun = opts.dryRun ? "All" : undefined;
  const created = (await (namespace
    ? api.createNamespacedCustomObject({ ...coordinatesOf(kind.crd), namespace, body: object, dryRun })
    : api.createClusterCustomObject({ ...coordinatesOf(kind.crd), body: object, dryRun })
  ).catch((err) => apiFailure(err, label(kind, name, namespace)))) as T;
  printResult(
    created,
    (opts.output ?? "text") as OutputFormat,
    () =>
      `${kind.crd.spec.names.singular}/${name} ${opts.dryRun ? "valid (dry run: nothing created)" : "created"}`,
  );
  return created;
}

export async function readObject<T extends KubernetesObject>(
  command: Command,
  kind: ObjectKind<T>,
  name: string,
): Promise<T> {
  const api = objectsApi(command);
  const namespace = isNamespaced(kind) ? namespaceOf(command) : undefined;
  return (await (namespace
    ? api.getNamespacedCustomObject({ ...coordinatesOf(kind.crd), namespace, name })
    : api.getClusterCustomObject({ ...coordinatesOf(kind.crd), name })
  ).catch((err) => apiFailure(err, label(kind, name, namespace)))) as T;
}

export async function listObjects<T extends KubernetesObject>(
  command: Command,
  kind: ObjectKind<T>,
  allNamespaces = false,
): Promise<T[]> {
  const api = objectsApi(command);
  const namespace = isNamespaced(kind) && !allNamespaces ? namespaceOf(command) : undefined;
  const list = (await (namespace
    ? api.listNamespacedCustomObject({ ...coordinatesOf(kind.crd), namespace })
    : api.listClusterCustomObject(coordinatesOf(kind.crd))
  ).catch((err) => apiFailure(err, `${kind.noun}s`))) as { items: T[] };
  return list.items.sort(
    (a, b) =>
      (a.metadata?.namespace ?? "").localeCompare(b.metadata?.namespace ?? "") ||
      a.metadata!.name!.localeCompare(b.metadata!.name!),
  );
}

/** The kind's rows as kubectl prints them (NAMESPACE first when listing every namespace). */
export function table<T extends KubernetesObject>(kind: ObjectKind<T>, items: T[], withNamespace = false) {
  const cells = withNamespace
    ? [["NAMESPACE", (o: T) => o.metadata?.namespace ?? ""] as [string, (o: T) => string], ...kind.columns]
    : kind.columns;
  return columns([
    cells.map(([header]) => header),
    ...items.map((o) => cells.map(([, cell]) => cell(o))),
  ]).join("\n");
}

/**
 * `list`, `get` and `delete` of a kind under `group` (its `create` is the kind's own: flags differ).
 * Namespaced kinds take `-n` (default: the context's namespace) and `list -A`.
 */
export function registerObjectCommands<T extends KubernetesObject>(
  group: Command,
  kind: ObjectKind<T>,
): void {
  const namespaced = isNamespaced(kind);
  const plural = `${kind.noun}s`;
  const list = group
    .command("list")
    .description(`list ${plural}${namespaced ? " of a namespace (or -A: of all)" : ""}`)
    .option("-o, --output <format>", "text, json or yaml", "text");
  if (namespaced) list.option("-A, --all-namespaces", "every namespace");
  list.action(async (opts: { output: OutputFormat; allNamespaces?: boolean }, command: Command) => {
    const items = await listObjects(command, kind, opts.allNamespaces);
    printResult({ items }, opts.output, () =>
      items.length ? table(kind, items, opts.allNamespaces) : `no ${plural}`,
    );
  });

  group
    .command("get")
    .description(`show one ${kind.noun}`)
    .argument("<name>")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts: { output: OutputFormat }, command: Command) => {
      const object = await readObject(command, kind, name);
      printResult(object, opts.output, () => kind.describe?.(object) ?? table(kind, [object]));
    });

  group
    .command("delete")
    .description(`delete a ${kind.noun}`)
    .argument("<name>")
    .action(async (name: string, _opts, command: Command) => {
      const api = objectsApi(command);
      const namespace = namespaced ? namespaceOf(command) : undefined;
      await (namespace
        ? api.deleteNamespacedCustomObject({ ...coordinatesOf(kind.crd), namespace, name })
        : api.deleteClusterCustomObject({ ...coordinatesOf(kind.crd), name })
      ).catch((err) => apiFailure(err, label(kind, name, namespace)));
      process.stdout.write(`${kind.crd.spec.names.singular}/${name} deleted\n`);
    });
}

/**
 * A command group for one kind: `--kubeconfig` (and `-n` for namespaced kinds) on the group, so
 * every sub-command takes them before or after its own arguments.
 */
export function objectGroup<T extends KubernetesObject>(
  program: Command,
  name: string,
  kind: ObjectKind<T>,
  description: string,
): Command {
  const group = program.command(name).description(description);
  group.option(
    "--kubeconfig <path>",
    "cluster to talk to, as which user (default $KUBECONFIG, else the embedded home cluster)",
  );
  if (isNamespaced(kind)) group.option("-n, --namespace <namespace>", "namespace (default: the context's)");
  return group;
}
