/**
 * Whether a started runtime's server answers, asked by the controller itself, as JupyterHub's
 * spawner waits on the server's own URL: a kubelet runs readiness probes whole seconds apart
 * (periodSeconds ≥ 1), so a server up 10 ms after its process started would wait up to a period
 * for its pod to turn Ready. Once every container of a runtime's pod runs, its readiness (and
 * startup) probes are run from here every 50 ms against the pod's own IP until they all pass, and
 * the runtime is looked at again; from the pod's first Ready on, the kubelet's word alone counts.
 *
 * Only the pod's IP is dialled (a probe's `host` is ignored): the same address the runtimes proxy
 * forwards to, so this reaches nothing the proxy does not. exec and gRPC probes are the kubelet's
 * alone: a pod with one waits for its Ready.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import type { V1Container, V1Pod, V1Probe } from "@kubernetes/client-node";
import { pollUntil } from "../../common/index.js";

/** How often a started pod is dialled until it answers. */
export const ANSWER_POLL_MS = 50;
/** The longest one probe waits for an answer (a kubelet's default timeoutSeconds). */
const PROBE_TIMEOUT_MS = 1_000;

/** A probe as this check runs it: an HTTP GET or a TCP connection to a port of the pod. */
interface Dial {
  port: number;
  http?: { path: string; https: boolean; headers: Record<string, string> };
}

function portOf(port: number | string | undefined, container: V1Container): number | undefined {
  if (typeof port === "number") return port;
  if (port !== undefined && /^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** What to dial for one probe; undefined when it cannot be run from here (exec, gRPC, an unknown port). */
function dialOf(probe: V1Probe, container: V1Container): Dial | undefined {
  const get = probe.httpGet;
  const target = get ?? probe.tcpSocket;
  const port = target ? portOf(target.port as number | string, container) : undefined;
  if (port === undefined) return undefined;
  if (!get) return { port };
  const path = get.path ? (get.path.startsWith("/") ? get.path : `/${get.path}`) : "/";
  const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value]));
  return { port, http: { path, https: (get.scheme ?? "HTTP").toUpperCase() === "HTTPS", headers } };
}

/**
 * Every probe that decides a started pod's readiness, as dials; undefined when one of them cannot
 * be run from here, or when there is none (the kubelet turns such a pod Ready as it starts).
 */
export function dialsOf(pod: V1Pod): Dial[] | undefined {
  const dials: Dial[] = [];
  for (const container of pod.spec?.containers ?? []) {
    for (const probe of [container.startupProbe, container.readinessProbe]) {
      if (!probe) continue;
      const dial = dialOf(probe, container);
      if (!dial) return undefined;
      dials.push(dial);
    }
  }
  return dials.length ? dials : undefined;
}

/** One dial of `ip`: true on a connection (TCP) or a 200–399 answer (HTTP), as the kubelet counts. */
function dialOnce(ip: string, dial: Dial): Promise<boolean> {
  return new Promise((resolve) => {
    if (!dial.http) {
      const socket = connect({ host: ip, port: dial.port, timeout: PROBE_TIMEOUT_MS });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.on("connect", () => done(true));
      socket.on("timeout", () => done(false));
      socket.on("error", () => done(false));
      return;
    }
    const { path, https, headers } = dial.http;
    const send = https ? httpsRequest : httpRequest;
    const req = send(
      {
        host: ip,
        port: dial.port,
        path,
        method: "GET",
        headers: { "user-agent": "tenantry-runtimes", connection: "close", ...headers },
        timeout: PROBE_TIMEOUT_MS,
        agent: false,
        // As a kubelet's HTTPS probe: the server's own certificate is not checked.
        ...(https ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 400);
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** Every container of the pod runs (its process started), the pod has an IP and is not Ready yet. */
function startedNotReady(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp || !pod.status?.podIP) return false;
  if (pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return false;
  const statuses = pod.status.containerStatuses ?? [];
  const containers = pod.spec?.containers ?? [];
  return (
    containers.length > 0 && containers.every((c) => statuses.find((s) => s.name === c.name)?.state?.running)
  );
}

/** The running containers' ids: an answer counts for these processes only. */
const processesOf = (pod: V1Pod) =>
  (pod.status?.containerStatuses ?? [])
    .map((s) => `${s.name}=${s.containerID ?? ""}:${s.restartCount}`)
    .sort()
    .join(",");

export class AnsweringChecks {
  /** Per pod uid: the processes being dialled, and whether they answered. */
  private readonly checks = new Map<
    string,
    { processes: string; answered: boolean; abort: AbortController }
  >();

  constructor(private readonly onAnswered: (pod: V1Pod) => void) {}

  /**
   * Whether `pod`'s server answered this controller's own probes; starts dialling a started pod
   * that is not Ready yet (for at most `deadlineMs`), and forgets a pod the kubelet turned Ready.
   */
  answered(pod: V1Pod, deadlineMs: number): boolean {
    const uid = pod.metadata?.uid;
    if (!uid) return false;
    const check = this.checks.get(uid);
    if (!startedNotReady(pod)) {
      this.forget(uid);
      return false;
    }
    const processes = processesOf(pod);
    if (check?.processes === processes) return check.answered;
    this.forget(uid);
    const dials = dialsOf(pod);
    if (!dials || deadlineMs <= 0) return false;
    const entry = { processes, answered: false, abort: new AbortController() };
    this.checks.set(uid, entry);
    const ip = pod.status!.podIP!;
    void pollUntil(
      async () => ((await Promise.all(dials.map((d) => dialOnce(ip, d)))).every(Boolean) ? true : undefined),
      { intervalMs: ANSWER_POLL_MS, timeoutMs: deadlineMs, signal: entry.abort.signal },
    )
      .then((ok) => {
        if (!ok || this.checks.get(uid) !== entry) return;
        entry.answered = true;
        this.onAnswered(pod);
      })
      .catch(() => undefined);
    return false;
  }

  /** Stops dialling a pod (gone, Ready, or its processes changed). */
  forget(uid: string): void {
    this.checks.get(uid)?.abort.abort();
    this.checks.delete(uid);
  }

  stop(): void {
    for (const uid of [...this.checks.keys()]) this.forget(uid);
  }
}
