import type { Command } from "commander";
import { pino } from "pino";
import { startTenantry } from "../app/tenantry.js";

/** `tenantry run`: tenantry's controllers and webhooks against a cluster named by a kubeconfig. */
export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run tenantry's controllers and admission webhooks against a cluster")
    .requiredOption(
      "--kubeconfig <path>",
      "kubeconfig of the cluster (cluster-admin for installing CRDs and webhooks)",
    )
    .option("--cluster <name>", "name of the cluster in logs and keys", "home")
    .option("--webhook-host <ip>", "address the API server reaches the webhooks on", "127.0.0.1")
    .option("--webhook-port <port>", "webhook port (default: a free one)", (v) => Number(v))
    .option(
      "--api-audiences <list>",
      "kube-apiserver's --api-audiences, comma-separated (default: https://kubernetes.default.svc.cluster.local)",
    )
    .option("--log-level <level>", "trace, debug, info, warn or error", "info")
    .action(
      async (opts: {
        kubeconfig: string;
        cluster: string;
        webhookHost: string;
        webhookPort?: number;
        apiAudiences?: string;
        logLevel: string;
      }) => {
        const logger = pino({ level: opts.logLevel });
        const running = await startTenantry({
          cluster: opts.cluster,
          kubeconfig: opts.kubeconfig,
          logger,
          webhookHost: opts.webhookHost,
          ...(opts.webhookPort ? { webhookPort: opts.webhookPort } : {}),
          ...(opts.apiAudiences ? { apiAudiences: opts.apiAudiences.split(",").filter(Boolean) } : {}),
        });
        logger.info({ webhookUrl: running.webhookUrl }, "tenantry is running");
        await new Promise<void>((resolve) => {
          for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => resolve());
        });
        await running.stop();
      },
    );
}
