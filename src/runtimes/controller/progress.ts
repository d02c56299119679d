/**
 * Where a start is, read off the runtime's pods, claims and the kubelet's events: the steps after
 * Namespace (Volumes, Scheduled, Pulling, Ready) with a message people can act on, and the pod
 * that answers once one does.
 */
import type { CoreV1Event, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import type { StartStep } from "../api/runtime.js";

export type StepState = "Pending" | "InProgress" | "Done" | "Failed";

export interface StepReport {
  state: StepState;
  message: string;
}

export interface Observation {
  pods: readonly V1Pod[];
  claims: readonly V1PersistentVolumeClaim[];
  /** The kubelet's events about the pod being started (Pulling, Pulled, Failed …), oldest first. */
  events?: readonly CoreV1Event[];
  /**
   * Whether the controller's own probes saw this started pod's server answer before the kubelet's
   * next probe turned it Ready (answering.ts).
   */
  answered?: (pod: V1Pod) => boolean;
}

export interface Progress {
  steps: Record<Exclude<StartStep, "Namespace">, StepReport>;
  /** The pod answering (Ready, with an IP). */
  ready?: { pod: string; ip: string };
  /** The pod being started, if any (whose events tell about pulling). */
  pod?: V1Pod;
  /** The first step not done, for the runtime's message. */
  waiting?: { step: StartStep; message: string };
}

const created = (pod: V1Pod) => Date.parse(String(pod.metadata?.creationTimestamp ?? 0));

function condition(pod: V1Pod, type: string) {
  return pod.status?.conditions?.find((c) => c.type === type);
}

/** The Ready pod with an IP if there is one, else the newest pod not being deleted. */
export function currentPod(pods: readonly V1Pod[]): V1Pod | undefined {
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const ready = live.find((p) => condition(p, "Ready")?.status === "True" && p.status?.podIP);
  if (ready) return ready;
  return [...live].sort((a, b) => created(b) - created(a))[0];
}

function volumes(claims: readonly V1PersistentVolumeClaim[], scheduled: boolean): StepReport {
  if (claims.length === 0) return { state: "Done", message: "no volumes" };
  const lost = claims.find((c) => c.status?.phase === "Lost");
  if (lost) return { state: "Failed", message: `claim ${lost.metadata?.name} lost its volume` };
  const waiting = claims.filter((c) => c.status?.phase !== "Bound");
  if (waiting.length === 0) {
    return {
      state: "Done",
      message: `${claims.length === 1 ? `claim ${claims[0]!.metadata?.name}` : `${claims.length} claims`} bound`,
    };
  }
  const names = waiting.map((c) => c.metadata?.name).join(", ");
  return {
    state: "InProgress",
    message: `waiting for claim${waiting.length > 1 ? "s" : ""} ${names} to be bound${scheduled ? "" : " (some storage binds only once the pod is scheduled)"}`,
  };
}

function pulling(pod: V1Pod, events: readonly CoreV1Event[]): StepReport {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const lastPull = [...events].reverse().find((e) => e.reason === "Pulling" || e.reason === "Pulled");
  if (statuses.length === 0) {
    return {
      state: "InProgress",
      message: lastPull?.message ?? "waiting for the node to start the containers",
    };
  }
  for (const status of statuses) {
    const waiting = status.state?.waiting;
    if (!waiting) continue;
    const reason = waiting.reason ?? "";
    if (reason === "ErrImagePull" || reason === "ImagePullBackOff" || reason === "InvalidImageName") {
      return {
        state: "InProgress",
        message: `container ${status.name}: ${reason}${waiting.message ? `: ${waiting.message}` : ""}`,
      };
    }
    if (reason === "ContainerCreating" || reason === "PodInitializing" || reason === "") {
      return {
        state: "InProgress",
        message:
          lastPull?.reason === "Pulling"
            ? (lastPull.message ?? "pulling")
            : `container ${status.name}: creating`,
      };
    }
  }
  const images = [...new Set((pod.status?.containerStatuses ?? []).map((s) => s.image))].join(", ");
  return { state: "Done", message: `image${images.includes(",") ? "s" : ""} ${images} ready` };
}

function readiness(pod: V1Pod, answered: (pod: V1Pod) => boolean): StepReport {
  if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded") {
    return {
      state: "InProgress",
      message: `pod ${pod.metadata?.name} ${pod.status.phase}${pod.status.message ? `: ${pod.status.message}` : ""}; a new one is started`,
    };
  }
  if (condition(pod, "Ready")?.status === "True" && pod.status?.podIP) {
    return { state: "Done", message: `pod ${pod.metadata?.name} answers at ${pod.status.podIP}` };
  }
  if (pod.status?.podIP && answered(pod)) {
    return {
      state: "Done",
      message: `pod ${pod.metadata?.name} answers at ${pod.status.podIP} (its readiness probes passed; the node's next probe marks it Ready)`,
    };
  }
  for (const status of pod.status?.containerStatuses ?? []) {
    const waiting = status.state?.waiting;
    if (waiting?.reason === "CrashLoopBackOff" || waiting?.reason === "CreateContainerConfigError") {
      return {
        state: "InProgress",
        message: `container ${status.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`,
      };
    }
    const terminated = status.lastState?.terminated;
    if (!status.ready && terminated) {
      return {
        state: "InProgress",
        message: `container ${status.name} exited with ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ""}; restarted ${status.restartCount} times`,
      };
    }
  }
  return {
    state: "InProgress",
    message: `waiting for pod ${pod.metadata?.name} to pass its readiness probe`,
  };
}

const PENDING: StepReport = { state: "Pending", message: "" };

export function observe({ pods, claims, events = [], answered = () => false }: Observation): Progress {
  const pod = currentPod(pods);
  const scheduledCondition = pod ? condition(pod, "PodScheduled") : undefined;
  const scheduled = !!pod?.spec?.nodeName || scheduledCondition?.status === "True";
  const steps: Progress["steps"] = {
    Volumes: volumes(claims, scheduled),
    Scheduled: !pod
      ? { state: "InProgress", message: "waiting for the runtime's pod to be created" }
      : scheduled
        ? { state: "Done", message: `pod ${pod.metadata?.name} on node ${pod.spec?.nodeName ?? "?"}` }
        : {
            state: "InProgress",
            message: scheduledCondition?.message
              ? `pod ${pod.metadata?.name}: ${scheduledCondition.reason ?? "not scheduled"}: ${scheduledCondition.message}`
              : `waiting for pod ${pod.metadata?.name} to be scheduled`,
          },
    Pulling: pod && scheduled ? pulling(pod, events) : PENDING,
    Ready: PENDING,
  };
  if (pod && scheduled && steps.Pulling.state === "Done") steps.Ready = readiness(pod, answered);
  const ready =
    pod && steps.Ready.state === "Done" && pod.status?.podIP
      ? { pod: pod.metadata!.name!, ip: pod.status.podIP }
      : undefined;
  const order = ["Volumes", "Scheduled", "Pulling", "Ready"] as const;
  const first = order.find((name) => steps[name].state !== "Done");
  return {
    steps,
    ...(ready ? { ready } : {}),
    ...(pod ? { pod } : {}),
    ...(first ? { waiting: { step: first, message: steps[first].message || `waiting for ${first}` } } : {}),
  };
}
