/**
 * `tenantry monitor rules|alerts`: the MonitorRules of a cluster and the alerts firing now, read
 * from the rules' status (where the leading tenantry's monitor keeps them).
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import type { Command } from "commander";
import { UserError } from "../common/index.js";
import type { MonitorRule } from "../monitor/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../tenants/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "monitorrules" };

async function listRules(command: Command): Promise<MonitorRule[]> {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  const api = loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
  const list = (await api.listClusterCustomObject(coordinates)) as { items: MonitorRule[] };
  return list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
}

/** What a rule watches, in one line: `Pod long-pending > 5 min`, `Pod endpoint-probe GET …`. */
export function describeRule(rule: MonitorRule): string {
  const { spec } = rule;
  const what =
    spec.condition === "endpoint-probe" && spec.probe
      ? `GET ${spec.probe.endpointUrl} → ${spec.probe.statusCode} every ${spec.probe.periodSeconds}s`
      : `${spec.condition === "last-restart" ? "within" : ">"} ${spec.cutOffMinutes} min`;
  return `${spec.object} ${spec.condition} ${what}`;
}

export function registerMonitorCommands(program: Command): void {
  const monitor = program.command("monitor").description("monitor rules and the alerts firing now");
  monitor.option(
    "--kubeconfig <path>",
    "cluster to talk to (default $KUBECONFIG, else the embedded home cluster)",
  );

  monitor
    .command("rules")
    .description("list MonitorRules: what each watches, where, and how many alerts fire")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { output: OutputFormat }, command: Command) => {
      const rules = await listRules(command);
      printResult(rules, opts.output, () =>
        columns([
          ["NAME", "WATCHES", "TENANT", "REMEDIATION", "WEBHOOK", "FIRING"],
          ...rules.map((r) => [
            r.metadata!.name!,
            describeRule(r),
            r.spec.tenant ?? "*",
            r.spec.remediation?.action ?? "None",
            r.spec.webhook?.url ?? "",
            String(r.status?.firing ?? 0),
          ]),
        ]).join("\n"),
      );
    });

  monitor
    .command("alerts")
    .description("list the alerts firing now, oldest first")
    .option("--rule <name>", "only this rule's alerts")
    .option("--tenant <name>", "only this tenant's alerts")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { output: OutputFormat; rule?: string; tenant?: string }, command: Command) => {
      const rules = await listRules(command);
      if (opts.rule && !rules.some((r) => r.metadata?.name === opts.rule)) {
        throw new UserError(`monitor rule "${opts.rule}" not found`, EXIT.notFound);
      }
      const alerts = rules
        .filter((r) => !opts.rule || r.metadata?.name === opts.rule)
        .flatMap((r) =>
          (r.status?.alerts ?? []).map((a) => ({
            rule: r.metadata!.name!,
            condition: r.spec.condition,
            ...a,
          })),
        )
        .filter((a) => !opts.tenant || a.tenant === opts.tenant)
        .sort((a, b) => a.firedAt.localeCompare(b.firedAt));
      printResult(alerts, opts.output, () =>
        alerts.length === 0
          ? "no alerts firing"
          : columns([
              ["RULE", "CONDITION", "OBJECT", "TENANT", "SINCE", "MESSAGE"],
              ...alerts.map((a) => [
                a.rule,
                a.condition,
                `${a.kind}/${a.namespace ? `${a.namespace}/` : ""}${a.name}`,
                a.tenant ?? "",
                a.since,
                a.message,
              ]),
            ]).join("\n"),
      );
    });
}
