import type { V1Pod } from "@kubernetes/client-node";

/**
 * The status the process node writes for a pod, computed as the kubelet computes it from its
 * containers: phase, the conditions PodReadyToStartContainers, Initialized, ContainersReady and
 * Ready (PodScheduled stays the scheduler's), containerStatuses and initContainerStatuses, and the
 * pod's and host's addresses.
 */
export interface Terminated {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID?: string;
}

export type ContainerState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | { terminated: Terminated };

export interface ContainerView {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  state: ContainerState;
  last?: Terminated;
  restartCount: number;
  ready: boolean;
  started: boolean;
  /** An init container with restartPolicy Always: it runs beside the app containers. */
  sidecar?: boolean;
}

export interface PodView {
  podIP?: string;
  hostIP: string;
  startTime?: string;
  sandboxReady: boolean;
  initContainers: ContainerView[];
  containers: ContainerView[];
  /** Set once the pod has ended for good (every container done and none to restart, or deleted). */
  terminalPhase?: "Succeeded" | "Failed";
}

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed";

export function initDone(view: ContainerView): boolean {
  if (view.sidecar) return "running" in view.state && view.started;
  return "terminated" in view.state && view.state.terminated.exitCode === 0;
}

/** The kubelet's getPhase: Pending until every container has started once, then by restart policy. */
export function podPhase(pod: V1Pod, view: PodView): PodPhase {
  if (view.terminalPhase) return view.terminalPhase;
  const policy = pod.spec?.restartPolicy ?? "Always";
  const initFailed = view.initContainers.some(
    (c) => !c.sidecar && "terminated" in c.state && c.state.terminated.exitCode !== 0,
  );
  if (!view.initContainers.every(initDone)) return initFailed && policy === "Never" ? "Failed" : "Pending";
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of view.containers) {
    if ("running" in c.state) running++;
    else if ("terminated" in c.state) {
      stopped++;
      if (c.state.terminated.exitCode === 0) succeeded++;
    } else if (c.last) {
      stopped++;
      if (c.last.exitCode === 0) succeeded++;
    } else waiting++;
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped === 0) return "Pending";
  if (policy === "Always") return "Running";
  if (stopped === succeeded) return "Succeeded";
  return policy === "Never" ? "Failed" : "Running";
}

interface PodCondition {
  type: string;
  status: "True" | "False";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  lastProbeTime: null;
}

type Previous = readonly { type: string; status: string; lastTransitionTime?: unknown }[] | undefined;

function condition(
  previousConditions: Previous,
  type: string,
  ok: boolean,
  now: string,
  reason?: string,
  message?: string,
): PodCondition {
  const previous = previousConditions?.find((c) => c.type === type);
  const status = ok ? "True" : "False";
  const lastTransitionTime =
    previous && previous.status === status && previous.lastTransitionTime
      ? String(previous.lastTransitionTime)
      : now;
  return {
    type,
    status,
    ...(ok || !reason ? {} : { reason }),
    ...(ok || !message ? {} : { message }),
    lastTransitionTime,
    lastProbeTime: null,
  };
}

function containerStatus(view: ContainerView) {
  return {
    name: view.name,
    image: view.image,
    imageID: view.imageID,
    ...(view.containerID ? { containerID: view.containerID } : {}),
    ready: view.ready,
    started: view.started,
    restartCount: view.restartCount,
    state: view.state,
    lastState: view.last ? { terminated: view.last } : {},
  };
}

const names = (views: ContainerView[]) => `[${views.map((v) => v.name).join(" ")}]`;

/**
 * The status subresource as the kubelet would write it now. A condition's transition time is
 * carried over from `previous` (the last written, else the pod's) while its status is unchanged.
 */
export function podStatus(pod: V1Pod, view: PodView, now: Date, previous: Previous = pod.status?.conditions) {
  const at = now.toISOString().replace(/\.\d+Z$/, "Z");
  const phase = podPhase(pod, view);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const incompleteInit = view.initContainers.filter((c) => !initDone(c));
  const initialized = incompleteInit.length === 0 || (terminal && phase === "Succeeded");
  const unready = [...view.initContainers.filter((c) => c.sidecar), ...view.containers].filter(
    (c) => !c.ready,
  );
  const containersReady = unready.length === 0 && !terminal;
  const gates = (pod.spec?.readinessGates ?? []).map((g) => g.conditionType);
  const gatesFalse = gates.filter(
    (type) => pod.status?.conditions?.find((c) => c.type === type)?.status !== "True",
  );
  const readyMessage = terminal
    ? undefined
    : unready.length
      ? `containers with unready status: ${names(unready)}`
      : gatesFalse.length
        ? `corresponding condition of pod readiness gate "${gatesFalse[0]}" does not exist.`
        : undefined;
  const readyReason = terminal
    ? "PodCompleted"
    : unready.length
      ? "ContainersNotReady"
      : "ReadinessGatesNotReady";
  const conditions = [
    condition(previous, "PodReadyToStartContainers", view.sandboxReady && !terminal, at),
    condition(
      previous,
      "Initialized",
      initialized,
      at,
      "ContainersNotInitialized",
      `containers with incomplete status: ${names(incompleteInit)}`,
    ),
    condition(
      previous,
      "ContainersReady",
      containersReady,
      at,
      terminal ? "PodCompleted" : "ContainersNotReady",
      terminal ? undefined : `containers with unready status: ${names(unready)}`,
    ),
    condition(previous, "Ready", containersReady && gatesFalse.length === 0, at, readyReason, readyMessage),
  ];
  return {
    phase,
    conditions,
    hostIP: view.hostIP,
    hostIPs: [{ ip: view.hostIP }],
    ...(view.podIP ? { podIP: view.podIP, podIPs: [{ ip: view.podIP }] } : {}),
    ...(view.startTime ? { startTime: view.startTime } : {}),
    ...(view.initContainers.length
      ? { initContainerStatuses: view.initContainers.map(containerStatus) }
      : {}),
    containerStatuses: view.containers.map(containerStatus),
  };
}
