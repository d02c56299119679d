/** Namespace offloading (Liqo thesis, chapters 4 and 6): controllers, informers, pod webhook. */
import type { Logger } from "pino";
import type { ClusterClient } from "../../kube/index.js";
import type { MulticlusterInformers } from "../informers.js";
import { NamespaceMapController } from "./namespace-map-controller.js";
import { OffloadingController } from "./offloading-controller.js";
import { OffloadingStatusController } from "./status-controller.js";

export interface OffloadingControllersOptions {
  client: ClusterClient;
  informers: MulticlusterInformers;
  clusterId: string;
  logger: Logger;
  /** How often the NamespaceMap controller checks existing replicas. */
  probeIntervalMs?: number;
}

/** The three controllers of figure 6.2, sharing one set of informers. */
export function offloadingControllers(options: OffloadingControllersOptions) {
  return [
    new OffloadingController(options),
    new NamespaceMapController(options),
    new OffloadingStatusController(options),
  ];
}
