/**
 * The logical-clouds REST API: EMCO DCM's routes, bodies and status codes under `/v2/projects`,
 * over Project and LogicalCloud objects (reads from informers, writes as compare-and-swap on the
 * object), with tenantry's additions: cluster references by label selector, more users,
 * `onFailure` on instantiate, status per cluster with reasons, one kubeconfig for every cluster.
 */

import { randomBytes } from "node:crypto";
import type { TLSSocket } from "node:tls";
import swagger from "@fastify/swagger";
import type { FastifyInstance, FastifyReply, FastifyRequest, InjectOptions } from "fastify";
import type { Logger } from "pino";
import { type ClusterRegistry, ClusterUnavailable } from "../../clusters/index.js";
import { HttpServer, ProblemError, pollUntil } from "../../common/index.js";
import type { Caller } from "../../gateway/index.js";
import type { Authenticator, Identity } from "../../identity/index.js";
import {
  type ClusterClient,
  describeError,
  formatKubeTime,
  isAlreadyExists,
  isConflict,
  isNotFound,
  silentLogger,
  statusCode,
  statusOf,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import type {
  ClusterQuota,
  ClusterReference,
  KvPair,
  Lifecycle,
  LogicalCloud,
  LogicalCloudSpec,
  UserPermission,
} from "../api/logical-cloud.js";
import { type Project, projectNamespace } from "../api/project.js";
import {
  adminKubeconfig,
  certificateEntry,
  decodeSecret,
  endpointOf,
  keyEntry,
  userKubeconfig,
} from "../credentials.js";
import type { CloudInformers } from "../informers.js";
import { cloudUsers, deleteRefusal, hasNamespacePermission, levelOf } from "../plan.js";
import { ensureProjectNamespace, leftoverProjectNamespace } from "../projects.js";
import { resolveReference, selectClusters } from "../selection.js";
import { FieldError } from "../validation.js";
import {
  cloudFromBody,
  cloudToBody,
  kvFromBody,
  kvToBody,
  nameOf,
  permissionFromBody,
  permissionToBody,
  projectFromBody,
  projectToBody,
  quotaFromBody,
  quotaToBody,
  referenceFromBody,
  referenceToBody,
} from "./bodies.js";
import { CloudCallers, describePermission, type Permission } from "./callers.js";
import {
  CloudParams,
  ClusterQuotaBody,
  ClusterReferenceBody,
  InstantiateBody,
  ItemParams,
  KubeconfigQuery,
  KvPairBody,
  LogicalCloudBody,
  MAX_BODY_BYTES,
  Problem,
  ProjectBody,
  ProjectParams,
  StatusQuery,
  UserPermissionBody,
} from "./schemas.js";
import { statusAnswer } from "./status.js";

export const CLOUDS_OPENAPI_PATH = "/v2/openapi.json";
const PROJECTS = "/v2/projects";
const CLOUDS = `${PROJECTS}/:project/logical-clouds`;
const CLOUD = `${CLOUDS}/:lc`;

export interface LogicalCloudsApiOptions {
  client: ClusterClient;
  registry: ClusterRegistry;
  informers: CloudInformers;
  /** Serving certificate. */
  tls: { certPem: string; keyPem: string };
  /** CA of the client certificates callers may present (the cluster's client CA). */
  clientCaPem?: string;
  authenticator?: Authenticator;
  /** Called for each token a tenantry identity provider vouched for (first-login provisioning). */
  onAuthenticated?: (identity: Identity) => Promise<void>;
  host?: string;
  port?: number;
  logger?: Logger;
}

const badRequest = (detail: string, field?: string) =>
  new ProblemError(400, "bad request", detail, { field });
const notFound = (detail: string, field?: string) => new ProblemError(404, "not found", detail, { field });
const conflict = (detail: string, field?: string, headers: Record<string, string> = {}) =>
  new ProblemError(409, "conflict", detail, { field }, headers);

/** A project of that name is still being deleted: asking again in a few seconds will do. */
const stillGoing = (project: string, why: string) =>
  conflict(
    `project "${project}" was deleted and is still going (${why}): create it again in a few seconds`,
    "metadata.name",
    { "retry-after": "2" },
  );
/** How long deleting a project waits for it to be gone (its namespace removed) before answering. */
const PROJECT_DELETE_WAIT_MS = 20_000;

/** The problems every route may answer, for the OpenAPI document. */
const problems: Record<number, unknown> = {
  400: Problem,
  401: Problem,
  403: Problem,
  404: Problem,
  409: Problem,
  422: Problem,
};

/** A sub-resource kept as a list in the LogicalCloud's spec (DCM keeps each as its own object). */
interface SubResource<T extends { name: string }> {
  path: string;
  title: string;
  field: "clusterReferences" | "userPermissions" | "clusterQuotas" | "kvPairs";
  body: unknown;
  fromBody(body: Record<string, unknown> | undefined): T;
  toBody(item: T): Record<string, unknown>;
}

const newInstance = () => `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;

/** The cloud with a new lifecycle action asked for by `caller` (a fresh instance, retries on again). */
function withAction(
  cloud: LogicalCloud,
  action: Lifecycle["action"],
  instance: string,
  caller: Caller,
  onFailure: Lifecycle["onFailure"],
): LogicalCloud {
  return {
    ...cloud,
    spec: {
      ...cloud.spec,
      lifecycle: {
        action,
        instance,
        ...(onFailure ? { onFailure } : {}),
        requestedAt: formatKubeTime(Date.now()),
        requestedBy: caller.username.slice(0, 256),
      },
    },
  };
}

export class LogicalCloudsApi {
  private readonly shell: HttpServer & { app: FastifyInstance };
  private readonly callers: CloudCallers;
  private readonly logger: Logger;

  constructor(private readonly options: LogicalCloudsApiOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "logical-clouds-api" });
    this.callers = new CloudCallers(options.client, options.authenticator, options.onAuthenticated);
    this.shell = this.build();
  }

  get url(): string {
    return this.shell.url;
  }

  start(): Promise<string> {
    return this.shell.listen();
  }

  async stop(): Promise<void> {
    await this.shell.close();
  }

  drain(): void {
    this.shell.drain();
  }

  /** A renewed serving certificate: new connections get it, without a restart. */
  rotate(pair: { certPem: string; keyPem: string }): void {
    this.shell.replaceCertificate(pair);
  }

  inject(request: InjectOptions) {
    return this.shell.app.inject(request);
  }

  private build(): HttpServer & { app: FastifyInstance } {
    const { tls, clientCaPem } = this.options;
    const shell = HttpServer.fastify({
      what: "logical-clouds API",
      host: this.options.host ?? "127.0.0.1",
      port: this.options.port ?? 0,
      tls: { certPem: tls.certPem, keyPem: tls.keyPem, ...(clientCaPem ? { clientCaPem } : {}) },
      bodyLimit: MAX_BODY_BYTES,
      logger: this.logger,
      logLevel: "warn",
      problems: {
        // DCM answers a body that is not what the route takes 422.
        bodyValidationStatus: 422,
        translate: (err) => cloudsProblem(err),
        describeInternal: describeError,
      },
      fastify: { ajv: { customOptions: { allErrors: false, coerceTypes: false, removeAdditional: false } } },
    });
    const { app } = shell;
    // DCM's own examples post with `curl -d @file.json`, which says form-urlencoded: every body is JSON.
    const parseJson = (
      _request: FastifyRequest,
      body: string,
      done: (err: Error | null, value?: unknown) => void,
    ) => {
      if (body.trim() === "") return done(null, undefined);
      try {
        done(null, JSON.parse(body));
      } catch (err) {
        done(new FieldError("body", `is not JSON: ${(err as Error).message}`, 422));
      }
    };
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("*", { parseAs: "string" }, parseJson);
    // No body is an empty one (DCM's lifecycle calls send none); its checks then name what is missing.
    app.addHook("preValidation", async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    });
    app.register(swagger, {
      openapi: {
        info: {
          title: "tenantry logical clouds (DCM-compatible)",
          version: "v2",
          description:
            "EMCO Distributed Cloud Manager's API: projects, logical clouds and their cluster references, user permissions, cluster quotas and key-value pairs; instantiate, update, terminate, stop, status and kubeconfigs. Callers present a client certificate of the cluster or a bearer token; the cluster's RBAC decides (projects.tenantry.dev cluster-wide, logicalclouds.tenantry.dev in namespace tenantry-project-<project>).",
        },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
        security: [{ bearer: [] }],
      },
    });

    app.register(async (api) => {
      api.get(CLOUDS_OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());

      this.projectRoutes(api);
      this.cloudRoutes(api);
      this.cloudChangeRoutes(api);
      this.lifecycleRoutes(api);
      this.statusRoutes(api);
      this.subResourceRoutes(api);
    });
    return shell;
  }

  /** Projects: create, list, read, update, delete. */
  private projectRoutes(api: FastifyInstance): void {
    api.post(
      PROJECTS,
      { schema: { summary: "Create a project.", body: ProjectBody, response: problems } },
      async (request, reply) => {
        const caller = await this.authorized(request, { verb: "create", resource: "projects" });
        const { name, spec } = projectFromBody(request.body as Record<string, unknown> | undefined);
        // A project deleted a moment ago may still be going: refused before anything is made.
        const leftover = await leftoverProjectNamespace(this.options.client, name);
        if (leftover) throw stillGoing(name, leftover);
        let project: Project;
        try {
          project = (await this.options.client.objects.create({
            apiVersion: TENANTS_API_VERSION,
            kind: "Project",
            metadata: { name, annotations: { "tenantry.dev/created-by": caller.username.slice(0, 256) } },
            spec,
          })) as Project;
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
          const existing = await this.liveProject(name);
          if (existing?.metadata?.deletionTimestamp) {
            throw stillGoing(name, "its namespace and logical clouds are still being removed");
          }
          throw conflict(`project "${name}" already exists`, "metadata.name");
        }
        await ensureProjectNamespace(this.options.client, project);
        return reply.code(201).send(projectToBody(project));
      },
    );

    api.get(
      PROJECTS,
      { schema: { summary: "List the projects the caller may see.", response: problems } },
      async (request) => {
        const caller = await this.caller(request);
        const all = (await this.callers.allowed(caller, { verb: "list", resource: "projects" })).allowed;
        const projects = this.options.informers.projects
          .list()
          .filter((p) => all || this.isAdmin(caller, p))
          .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
        return projects.map(projectToBody);
      },
    );

    api.get(
      `${PROJECTS}/:project`,
      { schema: { summary: "A project.", params: ProjectParams, response: problems } },
      async (request) => {
        const { project } = request.params as { project: string };
        const found = await this.readableProject(request, project);
        return projectToBody(found);
      },
    );

    api.put(
      `${PROJECTS}/:project`,
      {
        schema: {
          summary: "Replace a project's description and admins.",
          params: ProjectParams,
          body: ProjectBody,
          response: problems,
        },
      },
      async (request) => {
        const { project } = request.params as { project: string };
        await this.authorized(request, { verb: "update", resource: "projects", name: project });
        const { name, spec } = projectFromBody(request.body as Record<string, unknown> | undefined);
        if (name !== project)
          throw badRequest(
            `metadata.name "${name}" is not the project "${project}" of the path`,
            "metadata.name",
          );
        const updated = await this.casProject(project, (p) => ({ ...p, spec }));
        return projectToBody(updated);
      },
    );

    api.delete(
      `${PROJECTS}/:project`,
      {
        schema: {
          summary: "Delete a project (it must hold no logical clouds).",
          params: ProjectParams,
          response: problems,
        },
      },
      async (request, reply) => {
        const { project } = request.params as { project: string };
        await this.authorized(request, { verb: "delete", resource: "projects", name: project });
        const found = await this.projectOr404(project);
        const clouds = await this.options.client.objects.list(
          TENANTS_API_VERSION,
          "LogicalCloud",
          projectNamespace(project),
        );
        if (clouds.items.length) {
          throw conflict(
            `project "${project}" still has logical clouds: ${clouds.items.map((c) => c.metadata!.name).join(", ")}; delete them first`,
          );
        }
        // In the foreground: the project goes once its namespace has, so its name is then free.
        await this.options.client.objects
          .delete(found, undefined, undefined, undefined, undefined, "Foreground")
          .catch((err: unknown) => {
            if (!isNotFound(err)) throw err;
          });
        await this.projectGone(project, PROJECT_DELETE_WAIT_MS);
        return reply.code(204).send();
      },
    );
  }

  /** Logical clouds: create, list, read. */
  private cloudRoutes(api: FastifyInstance): void {
    api.post(
      CLOUDS,
      {
        schema: {
          summary: "Create a logical cloud.",
          params: ProjectParams,
          body: LogicalCloudBody,
          response: problems,
        },
      },
      async (request, reply) => {
        const { project } = request.params as { project: string };
        const found = await this.projectOr404(project);
        await this.authorized(request, {
          verb: "create",
          resource: "logicalclouds",
          namespace: projectNamespace(project),
        });
        const { name, spec } = await cloudFromBody(request.body as Record<string, unknown> | undefined);
        await ensureProjectNamespace(this.options.client, found);
        let cloud: LogicalCloud;
        try {
          cloud = (await this.options.client.objects.create({
            apiVersion: TENANTS_API_VERSION,
            kind: "LogicalCloud",
            metadata: { name, namespace: projectNamespace(project) },
            spec,
          })) as LogicalCloud;
        } catch (err) {
          if (isAlreadyExists(err))
            throw conflict(`logical cloud "${name}" already exists in project "${project}"`, "metadata.name");
          throw err;
        }
        return reply.code(201).send(cloudToBody(cloud));
      },
    );

    api.get(
      CLOUDS,
      {
        schema: { summary: "List a project's logical clouds.", params: ProjectParams, response: problems },
      },
      async (request) => {
        const { project } = request.params as { project: string };
        await this.projectOr404(project);
        await this.authorized(request, {
          verb: "list",
          resource: "logicalclouds",
          namespace: projectNamespace(project),
        });
        return this.options.informers.clouds
          .list()
          .filter((c) => c.metadata?.namespace === projectNamespace(project))
          .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!))
          .map(cloudToBody);
      },
    );

    api.get(
      CLOUD,
      { schema: { summary: "A logical cloud.", params: CloudParams, response: problems } },
      async (request) => {
        const cloud = await this.cloudFor(request, "get");
        return cloudToBody(cloud);
      },
    );
  }

  /** Logical clouds: update, delete. */
  private cloudChangeRoutes(api: FastifyInstance): void {
    api.put(
      CLOUD,
      {
        schema: {
          summary: "Replace a logical cloud's description, namespace, labels and users.",
          params: CloudParams,
          body: LogicalCloudBody,
          response: problems,
        },
      },
      async (request, reply) => {
        const { lc } = request.params as { project: string; lc: string };
        await this.cloudFor(request, "update");
        const { name, spec } = await cloudFromBody(request.body as Record<string, unknown> | undefined);
        if (name !== lc)
          throw badRequest(
            `metadata.name "${name}" is not the logical cloud "${lc}" of the path`,
            "metadata.name",
          );
        const updated = await this.casCloud(request, (cloud) => {
          const up = cloud.spec.lifecycle && cloud.status?.deployedStatus !== "Terminated";
          if (up && (spec.namespace !== cloud.spec.namespace || (spec.level ?? "1") !== levelOf(cloud))) {
            throw conflict(
              "the namespace and level of an instantiated logical cloud cannot change: terminate it first",
              spec.namespace !== cloud.spec.namespace ? "spec.namespace" : "spec.level",
            );
          }
          const {
            description: _d,
            userData1: _u1,
            userData2: _u2,
            level: _l,
            namespace: _n,
            labels: _lb,
            user: _us,
            users: _uss,
            ...kept
          } = cloud.spec;
          return { ...cloud, spec: { ...kept, ...spec } as LogicalCloudSpec };
        });
        return reply.code(201).send(cloudToBody(updated));
      },
    );

    api.delete(
      CLOUD,
      {
        schema: {
          summary: "Delete a logical cloud (terminated or never instantiated).",
          params: CloudParams,
          response: problems,
        },
      },
      async (request, reply) => {
        const cloud = await this.cloudFor(request, "delete");
        const refusal = deleteRefusal(cloud);
        if (refusal) {
          // While clusters are being cleaned up, asking again shortly will do.
          throw conflict(refusal.detail, "status.deployedStatus", refusal.soon ? { "retry-after": "2" } : {});
        }
        await this.options.client.objects.delete(cloud).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
        return reply.code(204).send();
      },
    );
  }

  /** Lifecycle: instantiate, update, terminate, stop. */
  private lifecycleRoutes(api: FastifyInstance): void {
    api.post(
      `${CLOUD}/instantiate`,
      {
        schema: {
          summary: "Instantiate on every selected cluster (asynchronous: see status).",
          params: CloudParams,
          body: InstantiateBody,
          response: problems,
        },
      },
      async (request, reply) => {
        const caller = await this.caller(request);
        await this.cloudFor(request, "update");
        const body = (request.body ?? {}) as { onFailure?: unknown };
        const policy = body.onFailure === undefined ? "Rollback" : String(body.onFailure).toLowerCase();
        if (policy !== "rollback" && policy !== "keep" && policy !== "Rollback") {
          throw badRequest(`onFailure "${String(body.onFailure)}" must be "rollback" or "keep"`, "onFailure");
        }
        const onFailure = policy === "keep" ? "Keep" : "Rollback";
        const instance = newInstance();
        const updated = await this.casCloud(request, (cloud) => {
          this.checkInstantiable(cloud);
          return withAction(cloud, "Instantiate", instance, caller, onFailure);
        });
        return reply.code(202).send({
          name: updated.metadata!.name,
          instance,
          onFailure: onFailure.toLowerCase(),
          message: "instantiating: see its status",
        });
      },
    );

    api.post(
      `${CLOUD}/terminate`,
      {
        schema: {
          summary: "Remove it from every cluster (asynchronous: see status).",
          params: CloudParams,
          response: problems,
        },
      },
      async (request, reply) => {
        const caller = await this.caller(request);
        await this.cloudFor(request, "update");
        const instance = newInstance();
        const updated = await this.casCloud(request, (cloud) => {
          const lifecycle = cloud.spec.lifecycle;
          if (!lifecycle) throw conflict(`logical cloud "${cloud.metadata!.name}" was never instantiated`);
          if (lifecycle.action === "Terminate") {
            throw conflict(
              `logical cloud "${cloud.metadata!.name}" is already ${cloud.status?.instance === lifecycle.instance ? (cloud.status?.deployedStatus ?? "Terminating") : "Terminating"}`,
            );
          }
          return withAction(cloud, "Terminate", instance, caller, lifecycle.onFailure);
        });
        return reply
          .code(202)
          .send({ name: updated.metadata!.name, instance, message: "terminating: see its status" });
      },
    );

    api.post(
      `${CLOUD}/update`,
      {
        schema: {
          summary:
            "Apply changed references, quotas and permissions now (they are also applied as they change).",
          params: CloudParams,
          response: problems,
        },
      },
      async (request, reply) => {
        const caller = await this.caller(request);
        await this.cloudFor(request, "update");
        const instance = newInstance();
        await this.casCloud(request, (cloud) => {
          const lifecycle = cloud.spec.lifecycle;
          if (!lifecycle || lifecycle.action === "Terminate" || !cloud.status?.settledInstance) {
            throw conflict(
              `logical cloud "${cloud.metadata!.name}" is not instantiated (${cloud.status?.deployedStatus ?? "Created"}): instantiate it first`,
            );
          }
          return withAction(cloud, "Update", instance, caller, lifecycle.onFailure);
        });
        return reply.code(202).send({
          name: (request.params as { lc: string }).lc,
          instance,
          message: "updating: see its status",
        });
      },
    );

    api.post(
      `${CLOUD}/stop`,
      {
        schema: {
          summary: "Stop retrying clusters that failed (instantiate or terminate).",
          params: CloudParams,
          response: problems,
        },
      },
      async (request, reply) => {
        await this.cloudFor(request, "update");
        const updated = await this.casCloud(request, (cloud) =>
          cloud.spec.lifecycle && !cloud.spec.lifecycle.retriesStopped
            ? {
                ...cloud,
                spec: { ...cloud.spec, lifecycle: { ...cloud.spec.lifecycle, retriesStopped: true } },
              }
            : undefined,
        );
        return reply.code(200).send({
          name: updated.metadata!.name,
          message: updated.spec.lifecycle ? "retries stopped" : "nothing to stop",
        });
      },
    );
  }

  /** Status and kubeconfigs. */
  private statusRoutes(api: FastifyInstance): void {
    api.get(
      `${CLOUD}/status`,
      {
        schema: {
          summary: "Status, as a summary and per cluster (DCM's query).",
          params: CloudParams,
          querystring: StatusQuery,
          response: problems,
        },
      },
      async (request) => {
        const cloud = await this.cloudFor(request, "get");
        const query = request.query as StatusQuery;
        const list = (v: string | string[] | undefined) =>
          v === undefined ? [] : Array.isArray(v) ? v : [v];
        const view = query.status ?? "ready";
        if (view !== "ready" && view !== "deployed")
          throw badRequest(`status "${view}" must be "ready" or "deployed"`, "status");
        const output = query.output ?? "all";
        if (output !== "summary" && output !== "all" && output !== "detail")
          throw badRequest(`output "${output}" must be "summary", "all" or "detail"`, "output");
        const flag = (v: string | undefined) => v !== undefined && v !== "false";
        return statusAnswer((request.params as { project: string }).project, cloud, {
          view,
          output,
          clusters: list(query.cluster),
          resources: list(query.resource),
          listClusters: flag(query.clusters),
          listResources: flag(query.resources),
        });
      },
    );

    api.get(
      `${CLOUD}/kubeconfig`,
      {
        schema: {
          summary: "One kubeconfig with a context per cluster (tenantry's addition).",
          params: CloudParams,
          querystring: KubeconfigQuery,
          response: problems,
        },
      },
      async (request, reply) => {
        const cloud = await this.cloudFor(request, "get", "kubeconfig");
        const clusters = (cloud.status?.clusters ?? [])
          .filter((e) => e.state === "Ready")
          .map((e) => e.cluster);
        return this.sendKubeconfig(request, reply, cloud, clusters);
      },
    );
  }

  /** Sub-resources: cluster references, user permissions, cluster quotas, key-value pairs. */
  private subResourceRoutes(api: FastifyInstance): void {
    this.subResource<ClusterReference>(api, problems, {
      path: "cluster-references",
      title: "cluster reference",
      field: "clusterReferences",
      body: ClusterReferenceBody,
      fromBody: referenceFromBody,
      toBody: referenceToBody,
    });
    this.subResource<UserPermission>(api, problems, {
      path: "user-permissions",
      title: "user permission",
      field: "userPermissions",
      body: UserPermissionBody,
      fromBody: permissionFromBody,
      toBody: permissionToBody,
    });
    this.subResource<ClusterQuota>(api, problems, {
      path: "cluster-quotas",
      title: "cluster quota",
      field: "clusterQuotas",
      body: ClusterQuotaBody,
      fromBody: quotaFromBody,
      toBody: quotaToBody,
    });
    this.subResource<KvPair>(api, problems, {
      path: "kv-pairs",
      title: "kv pair",
      field: "kvPairs",
      body: KvPairBody,
      fromBody: kvFromBody,
      toBody: kvToBody,
    });

    api.get(
      `${CLOUD}/cluster-references/:name/kubeconfig`,
      {
        schema: {
          summary: "The kubeconfig of the clusters one reference selects.",
          params: ItemParams,
          querystring: KubeconfigQuery,
          response: problems,
        },
      },
      async (request, reply) => {
        const cloud = await this.cloudFor(request, "get", "kubeconfig");
        const { name } = request.params as { name: string };
        const reference = (cloud.spec.clusterReferences ?? []).find((r) => r.name === name);
        if (!reference)
          throw notFound(
            `logical cloud "${cloud.metadata!.name}" has no cluster reference "${name}"`,
            "name",
          );
        const clusters = (cloud.status?.clusters ?? [])
          .filter((e) => e.state === "Ready" && (e.references ?? []).includes(name))
          .map((e) => e.cluster);
        return this.sendKubeconfig(request, reply, cloud, clusters, `cluster reference "${name}"`);
      },
    );
  }

  private subResource<T extends { name: string }>(
    api: FastifyInstance,
    problems: Record<number, unknown>,
    sub: SubResource<T>,
  ): void {
    const base = `${CLOUD}/${sub.path}`;
    api.post(
      base,
      {
        schema: {
          summary: `Add a ${sub.title}.`,
          params: CloudParams,
          body: sub.body as never,
          response: problems,
        },
      },
      async (request, reply) => {
        await this.cloudFor(request, "update");
        const item = sub.fromBody(request.body as Record<string, unknown> | undefined);
        await this.casCloud(request, (cloud) => {
          const list = (cloud.spec[sub.field] ?? []) as unknown as T[];
          if (list.some((i) => i.name === item.name)) {
            throw conflict(
              `logical cloud "${cloud.metadata!.name}" already has ${sub.title} "${item.name}"`,
              "metadata.name",
            );
          }
          this.checkItem(cloud, sub, item);
          return { ...cloud, spec: { ...cloud.spec, [sub.field]: [...list, item] } };
        });
        return reply.code(201).send(sub.toBody(item));
      },
    );
    api.get(
      base,
      { schema: { summary: `List the ${sub.title}s.`, params: CloudParams, response: problems } },
      async (request) => {
        const cloud = await this.cloudFor(request, "get");
        return ((cloud.spec[sub.field] ?? []) as unknown as T[]).map((i) => sub.toBody(i));
      },
    );
    api.get(
      `${base}/:name`,
      { schema: { summary: `A ${sub.title}.`, params: ItemParams, response: problems } },
      async (request) => {
        const cloud = await this.cloudFor(request, "get");
        const { name } = request.params as { name: string };
        const item = ((cloud.spec[sub.field] ?? []) as unknown as T[]).find((i) => i.name === name);
        if (!item)
          throw notFound(`logical cloud "${cloud.metadata!.name}" has no ${sub.title} "${name}"`, "name");
        return sub.toBody(item);
      },
    );
    api.delete(
      `${base}/:name`,
      { schema: { summary: `Remove a ${sub.title}.`, params: ItemParams, response: problems } },
      async (request, reply) => {
        await this.cloudFor(request, "update");
        const { name } = request.params as { name: string };
        await this.casCloud(request, (cloud) => {
          const list = (cloud.spec[sub.field] ?? []) as unknown as T[];
          if (!list.some((i) => i.name === name)) {
            throw notFound(`logical cloud "${cloud.metadata!.name}" has no ${sub.title} "${name}"`, "name");
          }
          return { ...cloud, spec: { ...cloud.spec, [sub.field]: list.filter((i) => i.name !== name) } };
        });
        return reply.code(204).send();
      },
    );
  }

  /** What an item may not be, given its cloud (400, or 404 for an unknown cluster). */
  private checkItem<T extends { name: string }>(cloud: LogicalCloud, sub: SubResource<T>, item: T): void {
    if (sub.field === "clusterQuotas" && levelOf(cloud) === "0") {
      throw badRequest("a level-0 logical cloud has no quotas (it makes nothing in the clusters)", "spec");
    }
    if (sub.field === "userPermissions" && levelOf(cloud) === "0") {
      throw badRequest(
        "a level-0 logical cloud has no user permissions (its users are the clusters' own)",
        "spec",
      );
    }
    if (sub.field === "userPermissions") {
      const users = new Set(cloudUsers(cloud).map((u) => u.userName));
      ((item as unknown as UserPermission).users ?? []).forEach((u, i) => {
        if (!users.has(u))
          throw badRequest(
            `"${u}" is not a user of logical cloud "${cloud.metadata!.name}"`,
            `spec.users[${i}]`,
          );
      });
    }
    if (sub.field === "clusterReferences") {
      const reference = item as unknown as ClusterReference;
      if (reference.cluster) {
        const { problem } = resolveReference(reference, this.options.registry);
        if (problem) throw notFound(problem.message, "spec.cluster");
      }
    }
  }

  /** The refusals DCM gives an instantiate, and tenantry's: nothing to select, a selector matching nothing. */
  private checkInstantiable(cloud: LogicalCloud): void {
    const name = cloud.metadata!.name!;
    const lifecycle = cloud.spec.lifecycle;
    const status = cloud.status;
    if (lifecycle && lifecycle.action !== "Terminate") {
      if (status?.instance !== lifecycle.instance || status.deployedStatus === "Instantiating") {
        throw conflict(
          `logical cloud "${name}" is already being instantiated (instance ${lifecycle.instance})`,
        );
      }
      if (status.deployedStatus === "Instantiated")
        throw conflict(`logical cloud "${name}" is already instantiated`);
      if (
        status.rolledBackInstance === lifecycle.instance &&
        (status.clusters ?? []).some((e) => e.state !== "Removed")
      ) {
        throw conflict(`logical cloud "${name}" is still being rolled back: ${status.message ?? ""}`);
      }
    }
    if (
      lifecycle?.action === "Terminate" &&
      (status?.instance !== lifecycle.instance || status.deployedStatus !== "Terminated")
    ) {
      throw conflict(
        `logical cloud "${name}" is being terminated: instantiate it again once it is Terminated`,
      );
    }
    if (!cloud.spec.clusterReferences?.length) {
      throw badRequest(
        `logical cloud "${name}" has no cluster references: add one (POST …/cluster-references)`,
        "cluster-references",
      );
    }
    if (levelOf(cloud) === "1") {
      if (!cloud.spec.user) throw badRequest(`logical cloud "${name}" has no user`, "spec.user");
      if (!hasNamespacePermission(cloud)) {
        throw badRequest(
          `logical cloud "${name}" needs a user permission on its namespace "${cloud.spec.namespace}" (POST …/user-permissions with spec.namespace "${cloud.spec.namespace}")`,
          "user-permissions",
        );
      }
    }
    const { referenceProblems } = selectClusters(cloud, this.options.registry);
    const problem = referenceProblems.find((p) => p.status === 404) ?? referenceProblems[0];
    if (problem) {
      throw new ProblemError(
        problem.status,
        problem.status === 404 ? "not found" : "bad request",
        `cluster reference "${problem.reference}": ${problem.message}`,
        { field: `cluster-references.${problem.reference}` },
      );
    }
  }

  private async sendKubeconfig(
    request: FastifyRequest,
    reply: FastifyReply,
    cloud: LogicalCloud,
    clusters: string[],
    what = "any cluster",
  ) {
    const name = cloud.metadata!.name!;
    if (clusters.length === 0) {
      throw conflict(
        `logical cloud "${name}" is not instantiated on ${what} yet (${cloud.status?.deployedStatus ?? "Created"})`,
      );
    }
    const { registry, informers } = this.options;
    if (levelOf(cloud) === "0") {
      // Level 0 hands out the clusters' own credentials: only for those who may read them.
      await this.authorized(request, { verb: "get", resource: "clusters", subresource: "kubeconfig" });
      const text = adminKubeconfig(
        clusters.map((cluster) => ({ cluster, kubeconfig: registry.kubeconfigOf(cluster) })),
      );
      return reply.code(200).type("application/yaml").send(text);
    }
    const users = cloudUsers(cloud);
    const wanted = (request.query as { user?: string }).user ?? users[0]?.userName;
    const user = users.find((u) => u.userName === wanted);
    if (!user) throw notFound(`logical cloud "${name}" has no user "${wanted}"`, "user");
    const data = decodeSecret(informers.credentialsOf(cloud));
    const entries = clusters.flatMap((cluster) => {
      const certPem = data[certificateEntry(user.userName, cluster)];
      return certPem && registry.get(cluster)
        ? [{ endpoint: endpointOf(cluster, registry.kubeconfigOf(cluster)), certPem }]
        : [];
    });
    if (entries.length === 0) throw conflict(`no certificate of "${user.userName}" is signed yet on ${what}`);
    const keyPem = data[keyEntry(user.userName)];
    const text = userKubeconfig({
      user: user.userName,
      namespace: cloud.spec.namespace!,
      ...(keyPem ? { keyPem } : {}),
      clusters: entries,
    });
    return reply.code(200).type("application/yaml").send(text);
  }

  // Callers, projects, clouds -------------------------------------------------------------------

  private async caller(request: FastifyRequest): Promise<Caller> {
    const result = await this.callers.authenticate(request.raw.socket as TLSSocket, request.headers);
    if (!result.ok) throw new ProblemError(401, "unauthorized", result.message);
    return result.caller;
  }

  private async authorized(request: FastifyRequest, permission: Permission): Promise<Caller> {
    const caller = await this.caller(request);
    const decision = await this.callers.allowed(caller, permission);
    if (!decision.allowed) {
      throw new ProblemError(
        403,
        "forbidden",
        `user "${caller.username}" may not ${describePermission(permission)}${decision.reason ? ` (${decision.reason})` : ""}`,
      );
    }
    return caller;
  }

  private isAdmin(caller: Caller, project: Project): boolean {
    return (project.spec.admins ?? []).some(
      (a) =>
        (a.kind === "User" && a.name === caller.username) ||
        (a.kind === "Group" && caller.groups.includes(a.name)),
    );
  }

  private async readableProject(request: FastifyRequest, name: string): Promise<Project> {
    const caller = await this.caller(request);
    const project = await this.projectOr404(name);
    if (this.isAdmin(caller, project)) return project;
    if ((await this.callers.allowed(caller, { verb: "get", resource: "projects", name })).allowed)
      return project;
    const inNamespace = {
      verb: "list",
      resource: "logicalclouds",
      namespace: projectNamespace(name),
    } as const;
    if ((await this.callers.allowed(caller, inNamespace)).allowed) return project;
    throw new ProblemError(
      403,
      "forbidden",
      `user "${caller.username}" may not ${describePermission({ verb: "get", resource: "projects", name })}`,
    );
  }

  private async liveProject(name: string): Promise<Project | undefined> {
    try {
      return (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "Project",
        metadata: { name },
      })) as Project;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Waits until the project is gone, up to `timeoutMs`; whether it is. */
  private async projectGone(name: string, timeoutMs: number): Promise<boolean> {
    const gone = await pollUntil(async () => ((await this.liveProject(name)) ? undefined : true), {
      timeoutMs,
      intervalMs: 250,
    });
    return gone ?? false;
  }

  private async projectOr404(name: string): Promise<Project> {
    const cached = this.options.informers.projects.get(undefined, name);
    if (cached && !cached.metadata?.deletionTimestamp) return cached;
    try {
      const live = (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "Project",
        metadata: { name },
      })) as Project;
      if (!live.metadata?.deletionTimestamp) return live;
    } catch (err) {
      if (!isNotFound(err) && statusCode(err) !== 400) throw err;
    }
    throw notFound(`project "${name}" not found`, "project");
  }

  /** The logical cloud of the request's path, after checking the project exists and the caller may `verb` it. */
  private async cloudFor(request: FastifyRequest, verb: string, subresource?: string): Promise<LogicalCloud> {
    const { project, lc } = request.params as { project: string; lc: string };
    await this.projectOr404(project);
    await this.authorized(request, {
      verb,
      resource: "logicalclouds",
      namespace: projectNamespace(project),
      name: lc,
      ...(subresource ? { subresource } : {}),
    });
    const namespace = projectNamespace(project);
    const cached = this.options.informers.clouds.get(namespace, lc);
    if (cached) return cached;
    try {
      return (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "LogicalCloud",
        metadata: { name: lc, namespace },
      })) as LogicalCloud;
    } catch (err) {
      if (isNotFound(err) || statusCode(err) === 400)
        throw notFound(`logical cloud "${lc}" not found in project "${project}"`, "lc");
      throw err;
    }
  }

  /**
   * Reads the logical cloud afresh, applies `change` and writes it back only if nobody wrote in
   * between (resourceVersion); on a conflict, again from the new state. `change` may refuse (throw)
   * or return undefined for no change.
   */
  private async casCloud(
    request: FastifyRequest,
    change: (cloud: LogicalCloud) => LogicalCloud | undefined,
  ): Promise<LogicalCloud> {
    const { project, lc } = request.params as { project: string; lc: string };
    const ref = {
      apiVersion: TENANTS_API_VERSION,
      kind: "LogicalCloud",
      metadata: { name: lc, namespace: projectNamespace(project) },
    };
    return this.compareAndSwap(ref, change, () =>
      notFound(`logical cloud "${lc}" not found in project "${project}"`, "lc"),
    );
  }

  private casProject(name: string, change: (project: Project) => Project | undefined): Promise<Project> {
    const ref = { apiVersion: TENANTS_API_VERSION, kind: "Project", metadata: { name } };
    return this.compareAndSwap(ref, change, () => notFound(`project "${name}" not found`, "project"));
  }

  private async compareAndSwap<T extends { metadata?: { resourceVersion?: string } }>(
    ref: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
    change: (current: T) => T | undefined,
    missing: () => ProblemError,
  ): Promise<T> {
    const { client } = this.options;
    for (let attempt = 0; ; attempt++) {
      let current: T;
      try {
        current = (await client.objects.read(ref)) as unknown as T;
      } catch (err) {
        if (isNotFound(err)) throw missing();
        throw err;
      }
      const next = change(current);
      if (!next) return current;
      try {
        return (await client.objects.replace(next as never)) as unknown as T;
      } catch (err) {
        if (isNotFound(err)) throw missing();
        if (!isConflict(err) || attempt >= 5) throw err;
      }
    }
  }
}

/** The logical clouds' own errors, and the API server's refusals of the writes a request asked for. */
function cloudsProblem(err: Error): ProblemError | undefined {
  if (err instanceof ClusterUnavailable) {
    return new ProblemError(503, "cluster unavailable", err.message, { field: "cluster" });
  }
  if (err instanceof FieldError) {
    const title = err.status === 422 ? "unprocessable" : "bad request";
    return new ProblemError(err.status, title, err.message, { field: err.field, limit: err.limit });
  }
  if ((err as { statusCode?: number }).statusCode !== undefined) return undefined;
  const code = statusCode(err);
  const status = statusOf(err) as { details?: { causes?: { reason?: string }[] } } | undefined;
  if (status?.details?.causes?.some((c) => c.reason === "NamespaceTerminating")) {
    // The project went (or is going) meanwhile: nothing can be made in its namespace any more.
    return new ProblemError(
      409,
      "conflict",
      `the project is being deleted: ${statusOf(err)?.message ?? ""}`,
      {
        field: "project",
      },
    );
  }
  if (code !== undefined && code >= 400 && code < 500) {
    // The API server refused a write the request asked for (its own validation): the request's fault.
    return new ProblemError(
      code === 409 ? 409 : 400,
      "refused",
      statusOf(err)?.message ?? describeError(err),
    );
  }
  if (code !== undefined || /ECONNREFUSED|ECONNRESET|aborted/i.test(describeError(err))) {
    return new ProblemError(
      503,
      "unavailable",
      `the cluster holding the logical clouds did not answer: ${describeError(err)}`,
    );
  }
  return undefined;
}

export async function startLogicalCloudsApi(options: LogicalCloudsApiOptions): Promise<LogicalCloudsApi> {
  const api = new LogicalCloudsApi(options);
  await api.start();
  return api;
}

export { nameOf };
