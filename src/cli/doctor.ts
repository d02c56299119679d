/** `tenantry doctor`: what is wrong with an installation, and how to fix it. */
import type { Command } from "commander";
import {
  ALL_CRDS,
  type CheckStatus,
  diagnose,
  type Finding,
  leaderLeases,
  TENANTRY_NAMESPACE,
} from "../app/index.js";
import { loadClusterClient } from "../kube/index.js";
import { resolveKubeconfig } from "./kube-context.js";
import { EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

const MARK: Record<CheckStatus, string> = { ok: "ok", warning: "WARNING", error: "ERROR" };

/** The findings as a table, each problem's fix under it, and a verdict. */
export function formatFindings(findings: Finding[]): string {
  const lines = columns([
    ["STATUS", "CHECK", "DETAIL"],
    ...findings.map((f) => [MARK[f.status], f.check, f.detail]),
  ]);
  const problems = findings.filter((f) => f.status !== "ok");
  if (problems.length) {
    lines.push("", "How to fix:");
    for (const p of problems) lines.push(`- ${p.check}: ${p.detail}`, `  fix: ${p.fix ?? "see above"}`);
  }
  const errors = problems.filter((f) => f.status === "error").length;
  const warnings = problems.length - errors;
  lines.push(
    "",
    problems.length
      ? `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`
      : "tenantry is healthy",
  );
  return lines.join("\n");
}

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description(
      "check an installation: CRDs and versions, webhooks (registration, CA, reachability), certificates, leader, kube-apiserver's token and authorization webhooks; exit 1 on errors",
    )
    .option(
      "--kubeconfig <path>",
      "cluster to check, as an administrator (default $KUBECONFIG, else the embedded home cluster)",
    )
    .option("--namespace <name>", "tenantry's namespace", TENANTRY_NAMESPACE)
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts: { kubeconfig?: string; namespace: string; output: OutputFormat }) => {
      const client = loadClusterClient("doctor", resolveKubeconfig(opts.kubeconfig));
      const findings = await diagnose({
        client,
        namespace: opts.namespace,
        crds: ALL_CRDS,
        leaderLeases: leaderLeases(),
      });
      printResult(findings, opts.output, () => formatFindings(findings));
      if (findings.some((f) => f.status === "error")) process.exitCode = EXIT.failure;
    });
}
