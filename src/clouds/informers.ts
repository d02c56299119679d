/** The caches the logical-cloud controllers and the REST API share: projects, logical clouds and their credentials. */
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import { type ClusterClient, Informer, startInformers, stopInformers } from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { LogicalCloud } from "./api/logical-cloud.js";
import type { Project } from "./api/project.js";
import { CREDENTIALS_LABEL, credentialsSecretName } from "./credentials.js";

export class CloudInformers {
  readonly projects: Informer<Project>;
  readonly clouds: Informer<LogicalCloud>;
  readonly credentials: Informer<V1Secret>;

  constructor(readonly client: ClusterClient) {
    const api = { apiVersion: TENANTS_API_VERSION };
    this.projects = Informer.forResource<Project>(client, { ...api, kind: "Project" });
    this.clouds = Informer.forResource<LogicalCloud>(client, { ...api, kind: "LogicalCloud" });
    this.credentials = Informer.forResource<V1Secret>(client, {
      apiVersion: "v1",
      kind: "Secret",
      labelSelector: CREDENTIALS_LABEL,
    });
  }

  private get all(): Informer<KubernetesObject>[] {
    return [this.projects, this.clouds, this.credentials] as unknown as Informer<KubernetesObject>[];
  }

  start(timeoutMs = 60_000): Promise<void> {
    return startInformers(this.all, timeoutMs);
  }

  stop(): Promise<void> {
    return stopInformers(this.all);
  }

  credentialsOf(cloud: LogicalCloud): V1Secret | undefined {
    return this.credentials.get(cloud.metadata!.namespace!, credentialsSecretName(cloud.metadata!.name!));
  }
}
