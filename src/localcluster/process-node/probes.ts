import { request } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import type { V1Container, V1Probe } from "@kubernetes/client-node";

/**
 * Container probes run for real against the container's process, with the kubelet's timing:
 * initialDelaySeconds, periodSeconds (10), timeoutSeconds (1), successThreshold (1) and
 * failureThreshold (3). httpGet succeeds on 200–399, tcpSocket when the connection opens.
 */
export type ProbeKind = "Readiness" | "Liveness" | "Startup";

export interface ProbeOutcome {
  success: boolean;
  /** Why it failed, worded as the kubelet words it. */
  output: string;
}

/** A named port of the container, or the number itself. */
export function resolvePort(port: number | string | undefined, container: V1Container): number | undefined {
  if (typeof port === "number") return port;
  if (port === undefined) return undefined;
  if (/^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function httpProbe(probe: NonNullable<V1Probe["httpGet"]>, host: string, port: number, timeoutMs: number) {
  return new Promise<ProbeOutcome>((resolve) => {
    const scheme = (probe.scheme ?? "HTTP").toLowerCase();
    const path = probe.path ? (probe.path.startsWith("/") ? probe.path : `/${probe.path}`) : "/";
    const url = `${scheme}://${host}:${port}${path}`;
    const headers: Record<string, string> = {
      "User-Agent": "kube-probe/1.33",
      Accept: "*/*",
      Connection: "close",
    };
    for (const header of probe.httpHeaders ?? []) headers[header.name] = header.value;
    const send = scheme === "https" ? httpsRequest : request;
    const req = send(
      url,
      {
        method: "GET",
        headers,
        timeout: timeoutMs,
        agent: false,
        ...(scheme === "https" ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        if (code >= 200 && code < 400) resolve({ success: true, output: "" });
        else resolve({ success: false, output: `HTTP probe failed with statuscode: ${code}` });
      },
    );
    req.on("timeout", () => {
      req.destroy();
      resolve({
        success: false,
        output: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      });
    });
    req.on("error", (err: NodeJS.ErrnoException) =>
      resolve({ success: false, output: `Get "${url}": ${dialError(host, port, err)}` }),
    );
    req.end();
  });
}

function dialError(host: string, port: number, err: NodeJS.ErrnoException): string {
  if (err.code === "ECONNREFUSED") return `dial tcp ${host}:${port}: connect: connection refused`;
  if (err.code === "ECONNRESET") return "read: connection reset by peer";
  return err.message;
}

function tcpProbe(host: string, port: number, timeoutMs: number) {
  return new Promise<ProbeOutcome>((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.on("connect", () => {
      socket.destroy();
      resolve({ success: true, output: "" });
    });
    socket.on("timeout", () => {
      socket.destroy();
      resolve({ success: false, output: `dial tcp ${host}:${port}: i/o timeout` });
    });
    socket.on("error", (err: NodeJS.ErrnoException) =>
      resolve({ success: false, output: dialError(host, port, err) }),
    );
  });
}

export function runProbe(probe: V1Probe, podIP: string, container: V1Container): Promise<ProbeOutcome> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  const target = probe.httpGet ?? probe.tcpSocket;
  if (target) {
    const port = resolvePort(target.port as number | string, container);
    if (port === undefined)
      return Promise.resolve({
        success: false,
        output: `port "${target.port}" is not a port of container ${container.name}`,
      });
    const host = target.host || podIP;
    return probe.httpGet ? httpProbe(probe.httpGet, host, port, timeoutMs) : tcpProbe(host, port, timeoutMs);
  }
  const kind = probe.exec ? "exec" : probe.grpc ? "grpc" : "empty";
  return Promise.resolve({
    success: false,
    output: `${kind} probes are not run on the process node (httpGet and tcpSocket are)`,
  });
}

/**
 * Runs one probe of one container until stopped. Reports each failure (for the Unhealthy event)
 * and each change of result once a threshold is crossed.
 */
export class ProbeWorker {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private result: boolean;

  constructor(
    readonly kind: ProbeKind,
    private readonly probe: V1Probe,
    private readonly podIP: string,
    private readonly container: V1Container,
    private readonly report: {
      failed(kind: ProbeKind, output: string): void;
      changed(kind: ProbeKind, success: boolean): void;
    },
    /** The result before the first probe: not ready, but alive; kept across a restart of the kubelet. */
    initial?: boolean,
  ) {
    this.result = initial ?? kind === "Liveness";
  }

  start(): void {
    this.schedule((this.probe.initialDelaySeconds ?? 0) * 1000);
  }

  current(): boolean {
    return this.result;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const outcome = await runProbe(this.probe, this.podIP, this.container);
    if (this.stopped) return;
    if (outcome.success) {
      this.failures = 0;
      this.successes++;
      if (
        !this.result &&
        this.successes >= (this.kind === "Readiness" ? (this.probe.successThreshold ?? 1) : 1)
      ) {
        this.result = true;
        this.report.changed(this.kind, true);
      }
    } else {
      this.successes = 0;
      this.failures++;
      this.report.failed(this.kind, outcome.output);
      if (this.result && this.failures >= (this.probe.failureThreshold ?? 3)) {
        this.result = false;
        this.report.changed(this.kind, false);
      } else if (this.kind === "Startup" && this.failures >= (this.probe.failureThreshold ?? 3)) {
        this.report.changed(this.kind, false);
      }
    }
    // A startup probe stops once it succeeded; the others run for the container's life.
    if (this.kind === "Startup" && this.result) return;
    this.schedule((this.probe.periodSeconds ?? 10) * 1000);
  }
}
