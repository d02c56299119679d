/**
 * Projects: each one's namespace on the registry's cluster (where its logical clouds live, owned
 * by the Project so they go with it) and the binding that makes its admins able to manage them.
 */
import type { V1ClusterRole, V1Namespace, V1RoleBinding } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatus,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  isNotFound,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  sameStoredJson,
  setCondition,
} from "../kube/index.js";
import { MANAGED_BY, MANAGED_BY_LABEL, TENANTRY_GROUP } from "../tenants/index.js";
import { type Project, projectNamespace } from "./api/project.js";
import type { CloudInformers } from "./informers.js";
import { PROJECT_LABEL } from "./plan.js";

export const LOGICAL_CLOUDS_ADMIN_CLUSTER_ROLE = "tenantry:logical-clouds-admin";
export const PROJECT_ADMINS_BINDING = "tenantry-project-admins";

/**
 * What a project's admins may do in its namespace: everything with its logical clouds, including
 * downloading their kubeconfigs (subresource `kubeconfig`). Bind it in a project's namespace to
 * make someone an admin of that project; cluster-wide to make them admin of every project.
 */
export const logicalCloudsAdminClusterRole: V1ClusterRole = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: LOGICAL_CLOUDS_ADMIN_CLUSTER_ROLE, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
  rules: [
    {
      apiGroups: [TENANTRY_GROUP],
      resources: ["logicalclouds", "logicalclouds/status", "logicalclouds/kubeconfig"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
  ],
};

function projectNamespaceObject(project: Project): V1Namespace {
  const name = project.metadata!.name!;
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: projectNamespace(name),
      labels: { [PROJECT_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY },
      ownerReferences: [
        {
          apiVersion: project.apiVersion,
          kind: project.kind,
          name,
          uid: project.metadata!.uid!,
          controller: true,
          // Deleting the project (in the foreground) waits for its namespace: the name is free
          // again only once nothing of the old project is left.
          blockOwnerDeletion: true,
        },
      ],
    },
  };
}

/** The project's namespace, made now (the REST API does not wait for the controller). */
export async function ensureProjectNamespace(client: ClusterClient, project: Project): Promise<string> {
  const namespace = projectNamespaceObject(project);
  await applyObject(client, namespace);
  return namespace.metadata!.name!;
}

/**
 * Why a project of this name cannot be made now (undefined: it can): the namespace of a deleted
 * project of that name is still there — being removed, or owned by that project and about to be
 * (the garbage collector's) — and a new project's clouds would go with it.
 */
export async function leftoverProjectNamespace(
  client: ClusterClient,
  project: string,
): Promise<string | undefined> {
  const name = projectNamespace(project);
  let namespace: V1Namespace;
  try {
    namespace = await client.core.readNamespace({ name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  if (namespace.metadata?.deletionTimestamp) {
    return `namespace ${name} of a deleted project "${project}" is still being removed`;
  }
  const owner = namespace.metadata?.ownerReferences?.find((o) => o.kind === "Project");
  if (!owner) return undefined;
  const live = await client.objects
    .read({ apiVersion: owner.apiVersion, kind: "Project", metadata: { name: project } })
    .catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
  // The project itself (made meanwhile): its create says it exists.
  if (live?.metadata?.uid === owner.uid) return undefined;
  return `namespace ${name} still belongs to a deleted project "${project}" and is about to be removed`;
}

function adminsBinding(project: Project): V1RoleBinding {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: {
      name: PROJECT_ADMINS_BINDING,
      namespace: projectNamespace(project.metadata!.name!),
      labels: { [PROJECT_LABEL]: project.metadata!.name!, [MANAGED_BY_LABEL]: MANAGED_BY },
    },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: LOGICAL_CLOUDS_ADMIN_CLUSTER_ROLE,
    },
    subjects: (project.spec.admins ?? []).map((a) => ({
      apiGroup: "rbac.authorization.k8s.io",
      kind: a.kind,
      name: a.name,
    })),
  };
}

export class ProjectController {
  private readonly controller: Controller;

  constructor(
    private readonly options: { client: ClusterClient; informers: CloudInformers; logger: Logger },
  ) {
    this.controller = new Controller({
      name: "projects",
      workers: 2,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(options.informers.projects);
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const { client, informers } = this.options;
    const project = informers.projects.get(undefined, ctx.ref.name);
    if (!project || project.metadata?.deletionTimestamp) return reconcileDone();
    let error: string | undefined;
    try {
      await ensureProjectNamespace(client, project);
      const binding = adminsBinding(project);
      if (binding.subjects?.length) await applyObject(client, binding);
      else {
        await client.objects
          .delete({
            apiVersion: binding.apiVersion,
            kind: binding.kind,
            metadata: { name: PROJECT_ADMINS_BINDING, namespace: binding.metadata!.namespace! },
          })
          .catch((err: unknown) => {
            if (!isNotFound(err)) throw err;
          });
      }
    } catch (err) {
      error = describeError(err);
    }
    const now = Date.now();
    const status = {
      observedGeneration: project.metadata?.generation,
      namespace: projectNamespace(project.metadata!.name!),
      conditions: setCondition(
        project.status?.conditions as Condition[] | undefined,
        error
          ? {
              type: "Ready",
              status: "False",
              reason: "NamespaceFailed",
              message: error.slice(0, 1000),
              observedGeneration: project.metadata?.generation,
            }
          : {
              type: "Ready",
              status: "True",
              reason: "ProjectReady",
              message: `logical clouds live in namespace ${projectNamespace(project.metadata!.name!)}`,
              observedGeneration: project.metadata?.generation,
            },
        now,
      ),
    };
    if (!sameStoredJson(status, project.status)) {
      await applyStatus(client, {
        apiVersion: project.apiVersion,
        kind: project.kind,
        metadata: { name: project.metadata!.name! },
        status,
      });
    }
    if (error) throw new Error(error);
    return reconcileDone();
  }
}
