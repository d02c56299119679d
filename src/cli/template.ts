/**
 * `tenantry template create|use|list|get|delete`: NamespaceTemplates — objects rendered into every
 * tenant namespace that uses the template, `${tenant}`, `${namespace}` and declared parameters
 * filled in. `use` adds one to a tenant (all its namespaces).
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Command } from "commander";
import { UserError } from "../common/index.js";
import {
  NAMESPACE_TEMPLATE_CRD,
  type NamespaceTemplate,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
} from "../tenants/index.js";
import { loadKubeConfig } from "./kube-context.js";
import {
  age,
  apiFailure,
  collect,
  createObject,
  EXIT,
  keyValue,
  type ObjectKind,
  objectGroup,
  readDocuments,
  readyOf,
  registerObjectCommands,
} from "./objects.js";

type TemplateObject = NamespaceTemplate["spec"]["objects"][number];

const templates: ObjectKind<NamespaceTemplate> = {
  crd: NAMESPACE_TEMPLATE_CRD,
  noun: "namespace template",
  columns: [
    ["NAME", (t) => t.metadata!.name!],
    ["OBJECTS", (t) => t.spec.objects.map((o) => `${o.kind}/${o.metadata?.name ?? ""}`).join(", ")],
    ["PARAMETERS", (t) => (t.spec.parameters ?? []).map((p) => p.name).join(", ")],
    ["NAMESPACES", (t) => String(t.status?.namespaceCount ?? 0)],
    ["READY", readyOf],
    ["AGE", (t) => age(t)],
  ],
  flags: { "spec.objects": "--file", "spec.parameters": "--parameter" },
};

/**
 * The template's objects from `file`: every document, or the objects of a NamespaceTemplate
 * manifest (then its parameters come along).
 */
function objectsFrom(file: string): Pick<NamespaceTemplate["spec"], "objects" | "parameters"> {
  const documents = readDocuments(file) as Record<string, unknown>[];
  const manifest = documents.find((d) => d?.kind === "NamespaceTemplate") as NamespaceTemplate | undefined;
  if (manifest) {
    if (documents.length > 1)
      throw new UserError(`--file ${file}: a NamespaceTemplate manifest must be the file's only document`);
    return { objects: manifest.spec?.objects ?? [], parameters: manifest.spec?.parameters };
  }
  for (const [i, d] of documents.entries()) {
    if (typeof d !== "object" || Array.isArray(d) || !d.apiVersion || !d.kind)
      throw new UserError(`--file ${file}: document ${i + 1} is not a Kubernetes object (apiVersion, kind)`);
  }
  return { objects: documents as TemplateObject[] };
}

/** `name` or `name=default`; a description is only for manifests. */
function parseParameter(text: string): { name: string; default?: string } {
  if (!text.includes("=")) return { name: text };
  const [name, value] = keyValue(text, "--parameter");
  return { name, default: value };
}

/** Adds (or, with new values, replaces) the template reference in a tenant's spec.templates. */
async function useTemplate(command: Command, template: string, tenant: string, parameters: string[]) {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  const api = loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
  const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };
  const current = (await api
    .getClusterCustomObject({ ...coordinates, name: tenant })
    .catch((err) => apiFailure(err, `tenant "${tenant}"`))) as Tenant;
  const values = Object.fromEntries(parameters.map((p) => keyValue(p, "--parameter")));
  const reference = { name: template, ...(Object.keys(values).length ? { parameters: values } : {}) };
  const others = (current.spec.templates ?? []).filter((t) => t.name !== template);
  // The resourceVersion makes it a compare-and-swap: a concurrent change to the list is not lost.
  await api
    .patchClusterCustomObject(
      {
        ...coordinates,
        name: tenant,
        body: {
          metadata: { resourceVersion: current.metadata!.resourceVersion },
          spec: { templates: [...others, reference] },
        },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    )
    .catch((err) => apiFailure(err, `tenant "${tenant}"`));
}

export function registerTemplateCommands(program: Command): void {
  const group = objectGroup(
    program,
    "template",
    templates,
    "NamespaceTemplates: objects rendered into every tenant namespace that uses them",
  );
  group
    .command("create")
    .description("create a template from a file of objects (or a NamespaceTemplate manifest)")
    .argument("<name>", "template name")
    .requiredOption(
      "-f, --file <file>",
      `YAML documents, one object each (- for stdin); \${tenant}, \${namespace} and parameters are filled in`,
    )
    .option("--parameter <name[=default]>", `a parameter the objects use as \${name}, repeatable`, collect)
    .option("--dry-run", "validate (here and by the API server), create nothing")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const fromFile = objectsFrom(opts.file as string);
      const parameters = [
        ...(fromFile.parameters ?? []),
        ...((opts.parameter as string[] | undefined) ?? []).map(parseParameter),
      ];
      const body: NamespaceTemplate = {
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceTemplate",
        metadata: { name },
        spec: { objects: fromFile.objects, ...(parameters.length ? { parameters } : {}) },
      };
      await createObject(command, templates, body, opts);
    });

  group
    .command("use")
    .description("render the template into every namespace of a tenant")
    .argument("<name>", "template name")
    .requiredOption("--tenant <tenant>", "the tenant")
    .option("--parameter <name=value>", "a value for a declared parameter, repeatable", collect)
    .action(async (name: string, opts: { tenant: string; parameter?: string[] }, command: Command) => {
      if (!opts.tenant) throw new UserError("--tenant: name the tenant", EXIT.badInput);
      await useTemplate(command, name, opts.tenant, opts.parameter ?? []);
      process.stdout.write(`tenant/${opts.tenant} uses namespacetemplate/${name}\n`);
    });
  registerObjectCommands(group, templates);
}
