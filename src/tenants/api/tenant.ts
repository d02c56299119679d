/**
 * Tenant: a group of namespaces with owners, quota, isolation and policy (Capsule's Tenant, with
 * the declared namespaces and per-user permissions and quotas of the ICN tenant design).
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  celString,
  DNS1123_LABEL,
  DnsLabel,
  DnsSubdomain,
  LabelMap,
  LabelSelector,
  LimitRangeItemSchema,
  ListMap,
  ListSet,
  ObservedGeneration,
  PolicyRuleSchema,
  ResourceList,
  ResourceSchema,
  StringEnum,
  StringMap,
  TolerationSchema,
  type ValidationRule,
} from "../../apis/index.js";
import { TENANTRY_LABEL_PREFIX } from "./group.js";

export const OWNER_KINDS = ["User", "Group", "ServiceAccount"] as const;
export type OwnerKind = (typeof OWNER_KINDS)[number];

/** Username Kubernetes gives a ServiceAccount: `system:serviceaccount:<namespace>:<name>`. */
export const SERVICE_ACCOUNT_USERNAME_PATTERN = `^system:serviceaccount:${DNS1123_LABEL.slice(1, -1)}:[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`;

export const POD_SECURITY_LEVELS = ["privileged", "baseline", "restricted"] as const;
export type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];

export const SERVICE_TYPES = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

/** What a tenant's owners get in its users' runtimes namespaces (spec.runtimeAccess.owners). */
export const RUNTIME_OWNER_ACCESS = ["None", "View", "Full"] as const;
export type RuntimeOwnerAccess = (typeof RUNTIME_OWNER_ACCESS)[number];

export const IMAGE_PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;
export type ImagePullPolicy = (typeof IMAGE_PULL_POLICIES)[number];

/** A namespace is `<tenant>-<name>`, and a namespace name has at most 63 characters. */
export const MAX_NAMESPACE_NAME = 63;

const USER_NAME_MAX = 512;

const OwnerSchema = Type.Object(
  {
    kind: StringEnum(OWNER_KINDS, {
      description: "Kind of subject: User, Group or ServiceAccount.",
    }),
    name: Type.String({
      description:
        "Name as the API server authenticates it: a user or group name, or for a ServiceAccount its username `system:serviceaccount:<namespace>:<name>`.",
      minLength: 1,
      maxLength: USER_NAME_MAX,
    }),
  },
  {
    description:
      "A tenant owner: administers every namespace of the tenant and may create new ones within namespaceQuota.",
    "x-kubernetes-validations": [
      {
        rule: `self.kind != 'ServiceAccount' || self.name.matches(${celString(SERVICE_ACCOUNT_USERNAME_PATTERN)})`,
        message: "a ServiceAccount owner must be named system:serviceaccount:<namespace>:<name>",
        fieldPath: ".name",
      },
    ],
  },
);
export type TenantOwner = Static<typeof OwnerSchema>;

const reservedLabelRules: ValidationRule[] = [
  {
    rule: `self.all(key, !key.startsWith('${TENANTRY_LABEL_PREFIX}') && !key.startsWith('pod-security.kubernetes.io/'))`,
    message: `labels under ${TENANTRY_LABEL_PREFIX} and pod-security.kubernetes.io/ are set by tenantry`,
  },
];

const TemplateReferenceSchema = Type.Object(
  {
    name: DnsSubdomain({ description: "Name of the NamespaceTemplate." }),
    parameters: Type.Optional(
      StringMap(Type.String({ description: "Parameter value.", maxLength: 4096 }), {
        description:
          "Values of the template's declared parameters (name → value); parameters left out take their default.",
        maxProperties: 32,
      }),
    ),
  },
  { description: "A NamespaceTemplate rendered into the namespace, with parameter values." },
);
export type TemplateReference = Static<typeof TemplateReferenceSchema>;

function TemplateReferences(description: string) {
  return ListMap(TemplateReferenceSchema, ["name"], { description, maxItems: 16 });
}

const DeclaredNamespaceSchema = Type.Object(
  {
    name: DnsLabel({
      description:
        "Short name; the namespace is created as `<tenant>-<name>` (`ns-1` in tenant `tenant-a` becomes `tenant-a-ns-1`).",
      maxLength: MAX_NAMESPACE_NAME - 1,
    }),
    templates: Type.Optional(
      TemplateReferences(
        "NamespaceTemplates rendered into this namespace, after the tenant-wide spec.templates.",
      ),
    ),
    labels: Type.Optional(
      LabelMap(
        "Extra labels on the namespace. Keys under tenantry.dev/ and pod-security.kubernetes.io/ are reserved.",
        reservedLabelRules,
      ),
    ),
  },
  { description: "A namespace the tenant controller creates and keeps for the tenant." },
);
export type DeclaredNamespace = Static<typeof DeclaredNamespaceSchema>;

function AllowedClasses(what: string) {
  return Type.Object(
    {
      names: Type.Optional(
        ListSet(DnsSubdomain({ description: `Name of a ${what}.` }), {
          description: `${what} names the tenant may use.`,
          maxItems: 64,
        }),
      ),
      regex: Type.Optional(
        Type.String({
          description: `Regular expression (RE2) a ${what} name may match instead of being listed, e.g. \`^gold-.*$\`.`,
          minLength: 1,
          maxLength: 256,
        }),
      ),
    },
    {
      description: `${what}es the tenant's workloads may use: listed names, or names matching regex. Unset means any; set but empty means none.`,
    },
  );
}

const AllowedRegistriesSchema = Type.Object(
  {
    names: Type.Optional(
      ListSet(
        Type.String({
          description:
            "A registry host (`quay.io`, `registry.example.com:5000`), or a registry host and path (`quay.io/acme`): images from it, or under it, are allowed.",
          minLength: 1,
          maxLength: 253,
          pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)*$",
        }),
        { description: "Registries (and repository paths within them) images may come from.", maxItems: 64 },
      ),
    ),
    regex: Type.Optional(
      Type.String({
        description:
          "Regular expression (RE2) an image's repository, registry host included and tag left out (`docker.io/library/nginx`), may match instead, e.g. `^registry\\.example\\.com/`.",
        minLength: 1,
        maxLength: 256,
      }),
    ),
  },
  {
    description:
      "Container registries the tenant's pods may pull from (Capsule's containerRegistries). An image without a registry is from `docker.io` (`nginx` is `docker.io/library/nginx`). Unset means any; set but empty means none.",
  },
);

const AllowedSchema = Type.Object(
  {
    storageClasses: Type.Optional(AllowedClasses("StorageClass")),
    ingressClasses: Type.Optional(AllowedClasses("IngressClass")),
    priorityClasses: Type.Optional(AllowedClasses("PriorityClass")),
    runtimeClasses: Type.Optional(AllowedClasses("RuntimeClass")),
    containerRegistries: Type.Optional(AllowedRegistriesSchema),
    imagePullPolicies: Type.Optional(
      ListSet(StringEnum(IMAGE_PULL_POLICIES, { description: "An imagePullPolicy." }), {
        description:
          "imagePullPolicy values the tenant's containers may have. A policy the API server filled in (the container did not say) is changed to the first allowed one; one the container set otherwise is refused. `[Always]` makes every image be pulled with the pod's own credentials, so a private image already on a node serves no one else. Unset means any.",
        minItems: 1,
        maxItems: IMAGE_PULL_POLICIES.length,
      }),
    ),
    serviceTypes: Type.Optional(
      ListSet(StringEnum(SERVICE_TYPES, { description: "A Service type." }), {
        description: "Service types the tenant may create. Default: ClusterIP only.",
        maxItems: SERVICE_TYPES.length,
        default: ["ClusterIP"],
      }),
    ),
    externalIPs: Type.Optional(
      Type.Boolean({
        description: "Whether Services may set spec.externalIPs. Default false.",
        default: false,
      }),
    ),
    privileged: Type.Optional(
      Type.Boolean({ description: "Whether containers may run privileged. Default false.", default: false }),
    ),
    hostNetwork: Type.Optional(
      Type.Boolean({
        description: "Whether pods may use the node's network namespace. Default false.",
        default: false,
      }),
    ),
    hostPID: Type.Optional(
      Type.Boolean({
        description: "Whether pods may use the node's PID namespace. Default false.",
        default: false,
      }),
    ),
    hostIPC: Type.Optional(
      Type.Boolean({
        description: "Whether pods may use the node's IPC namespace. Default false.",
        default: false,
      }),
    ),
    hostPath: Type.Optional(
      Type.Boolean({
        description: "Whether pods may mount hostPath volumes. Default false.",
        default: false,
      }),
    ),
    hostPorts: Type.Optional(
      Type.Boolean({ description: "Whether containers may bind host ports. Default false.", default: false }),
    ),
    addedCapabilities: Type.Optional(
      ListSet(
        Type.String({
          description: "A Linux capability without the CAP_ prefix, e.g. NET_BIND_SERVICE.",
          maxLength: 64,
          pattern: "^[A-Z][A-Z0-9_]*$",
        }),
        {
          description:
            "Linux capabilities containers may add in securityContext.capabilities.add. Default none.",
          maxItems: 64,
          default: [],
        },
      ),
    ),
    allowPrivilegeEscalation: Type.Optional(
      Type.Boolean({
        description: "Whether containers may set allowPrivilegeEscalation: true. Default false.",
        default: false,
      }),
    ),
    requireRunAsNonRoot: Type.Optional(
      Type.Boolean({
        description: "Refuse containers that may run as UID 0 (runAsNonRoot must be true). Default false.",
        default: false,
      }),
    ),
  },
  {
    description:
      "What the tenant's workloads may use. Every dangerous capability is denied unless switched on here.",
    default: {},
  },
);

const TenantUserSchema = Type.Object(
  {
    name: Type.String({
      description:
        "Username as the API server authenticates it (for a ServiceAccount `system:serviceaccount:<namespace>:<name>`).",
      minLength: 1,
      maxLength: USER_NAME_MAX,
    }),
    role: Type.Optional(
      DnsSubdomain({
        description:
          "A ClusterRole bound to the user in every namespace of the tenant, e.g. `edit` or `view`; permissions add to it.",
      }),
    ),
    permissions: Type.Optional(
      Type.Array(PolicyRuleSchema, {
        description: "What the user may do in every namespace of the tenant, as RBAC rules.",
        maxItems: 32,
      }),
    ),
    quota: Type.Optional(
      Type.Object(
        {
          hard: ResourceList(
            "Most the user's objects may use across the tenant, e.g. `cpu: 100`, `pods: 100`, `requests.dummy/dummyResource: 20`.",
          ),
        },
        { description: "The user's own share of the tenant's quota." },
      ),
    ),
  },
  { description: "A member of the tenant with specific permissions and an optional quota of their own." },
);
export type TenantUser = Static<typeof TenantUserSchema>;

export const TenantSpecSchema = Type.Object(
  {
    owners: ListMap(OwnerSchema, ["kind", "name"], {
      description:
        "Who administers the tenant: Users, Groups or ServiceAccounts. Owners get admin rights in every tenant namespace and may create namespaces within namespaceQuota.",
      minItems: 1,
      maxItems: 32,
    }),
    namespaces: Type.Optional(
      ListMap(DeclaredNamespaceSchema, ["name"], {
        description: "Namespaces created for the tenant, each named `<tenant>-<name>`.",
        maxItems: 64,
      }),
    ),
    templates: Type.Optional(
      TemplateReferences(
        "NamespaceTemplates rendered into every namespace of the tenant, declared or owner-created.",
      ),
    ),
    namespaceQuota: Type.Optional(
      Type.Integer({
        description:
          "How many namespaces the owners may create themselves (declared namespaces do not count). Unset means no limit; 0 means none.",
        format: "int32",
        minimum: 0,
        maximum: 10000,
      }),
    ),
    namespacePrefix: Type.Optional(
      Type.String({
        description: "When set, namespaces the owners create must start with this prefix, e.g. `acme-`.",
        minLength: 1,
        maxLength: MAX_NAMESPACE_NAME - 1,
        pattern: "^[a-z0-9][-a-z0-9]*$",
      }),
    ),
    quota: Type.Optional(
      Type.Object(
        {
          hard: Type.Optional(
            ResourceList(
              "Limits summed over all the tenant's namespaces, as in a ResourceQuota: `cpu`, `requests.memory`, `pods`, `count/deployments.apps`, extended resources.",
            ),
          ),
          quotaRef: Type.Optional(
            Type.Object(
              { name: DnsSubdomain({ description: "Name of the TenantResourceQuota." }) },
              {
                description:
                  "A TenantResourceQuota (for scopes or per-namespace quotas) to use instead of hard.",
              },
            ),
          ),
        },
        {
          description:
            "Aggregate quota over every namespace of the tenant: either hard limits or a quotaRef.",
          "x-kubernetes-validations": [
            { rule: "has(self.hard) != has(self.quotaRef)", message: "set exactly one of hard and quotaRef" },
          ],
        },
      ),
    ),
    limitRanges: Type.Optional(
      ListMap(
        Type.Object(
          {
            name: DnsLabel({
              description: "Name of the LimitRange in each namespace (prefixed by tenantry).",
            }),
            limits: Type.Array(LimitRangeItemSchema, {
              description: "Limits, as in a LimitRange's spec.limits.",
              minItems: 1,
              maxItems: 8,
            }),
          },
          { description: "A LimitRange created in every namespace of the tenant." },
        ),
        ["name"],
        { description: "LimitRanges created in every namespace of the tenant.", maxItems: 8 },
      ),
    ),
    networkIsolation: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(
            Type.Boolean({
              description:
                "Whether NetworkPolicies isolate the tenant: its namespaces reach each other, other tenants' namespaces cannot reach them. Default true.",
              default: true,
            }),
          ),
          allowFromNamespaces: Type.Optional(
            Type.Array(
              LabelSelector(
                "Namespaces (by label) that may reach the tenant, e.g. `kubernetes.io/metadata.name: ingress-nginx`.",
              ),
              {
                description:
                  "Namespaces outside the tenant that may still reach it, such as ingress or monitoring.",
                maxItems: 16,
              },
            ),
          ),
        },
        { description: "Network isolation between tenants.", default: {} },
      ),
    ),
    nodePool: Type.Optional(
      Type.Object(
        {
          nodeSelector: Type.Optional(
            LabelMap("Labels a node must carry to run the tenant's pods; added to every pod's nodeSelector."),
          ),
          tolerations: Type.Optional(
            Type.Array(TolerationSchema, {
              description: "Tolerations added to every pod, so pods may use the pool's tainted nodes.",
              maxItems: 16,
            }),
          ),
        },
        {
          description:
            "Nodes the tenant's pods run on: a node selector and tolerations injected into every pod.",
        },
      ),
    ),
    workerNodes: Type.Optional(
      Type.Object(
        {
          maxNodes: Type.Integer({
            description:
              "How many WorkerNodes the tenant's users may have at once (those being deleted count until they are gone); 0 means none.",
            format: "int32",
            minimum: 0,
            maximum: 10000,
          }),
          flavors: Type.Optional(
            ListSet(Type.String({ description: "A flavor name.", minLength: 1, maxLength: 255 }), {
              description: "Flavors the tenant's users may ask for. Unset means any the provider offers.",
              maxItems: 64,
            }),
          ),
          providers: Type.Optional(
            ListSet(DnsSubdomain({ description: "A NodeProvider name." }), {
              description: "NodeProviders the tenant's users may use. Unset means any.",
              maxItems: 16,
            }),
          ),
        },
        {
          description:
            "Worker nodes on demand (WorkerNode): how many the tenant's users may ask for, and which. Unset means the tenant may ask for none.",
        },
      ),
    ),
    podSecurity: Type.Optional(
      Type.Object(
        {
          level: Type.Optional(
            StringEnum(POD_SECURITY_LEVELS, {
              description: "privileged, baseline (default) or restricted.",
              default: "baseline",
            }),
          ),
        },
        {
          description:
            "Pod Security Standard enforced in every namespace of the tenant (pod-security.kubernetes.io/enforce).",
          default: {},
        },
      ),
    ),
    runtimeAccess: Type.Optional(
      Type.Object(
        {
          owners: Type.Optional(
            StringEnum(RUNTIME_OWNER_ACCESS, {
              description:
                "None: nothing (they may still delete the namespace). View: read what runs there — pods, services, claims, events, Runtimes — but no Secrets, ConfigMaps or logs, no exec, attach, port-forward or proxy, no changes. Full: what they have in the tenant's other namespaces, every use of it recorded (an Event in the namespace and an audit line).",
              default: "View",
            }),
          ),
        },
        {
          description:
            "A user's runtimes namespace is theirs: they get edit and may let others in with AccessGrants, the tenant's other members get nothing there, and its owners what this says.",
          default: {},
        },
      ),
    ),
    allowed: Type.Optional(AllowedSchema),
    users: Type.Optional(
      ListMap(TenantUserSchema, ["name"], {
        description: "Tenant members with their permissions and quotas.",
        maxItems: 128,
      }),
    ),
    cordoned: Type.Optional(
      Type.Boolean({
        description:
          "When true the tenant is frozen: its users may not create, change or delete anything in its namespaces (nor create namespaces), and no new pods start; what runs keeps running. tenantry and cluster administrators are not affected.",
        default: false,
      }),
    ),
    firstLoginGroups: Type.Optional(
      ListSet(
        Type.String({
          description: "A group name as the identity provider gives it, prefix included.",
          minLength: 1,
          maxLength: 256,
        }),
        {
          description:
            "Users of an identity provider (Keystone, OIDC) in one of these groups join this tenant at their first login when their provider names it. Without it only tenants that provider's first logins created are joined.",
          maxItems: 32,
        },
      ),
    ),
  },
  { description: "Desired state of the tenant." },
);
export type TenantSpec = Static<typeof TenantSpecSchema>;

export const TenantStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "Current state: `Ready` is True when every namespace and object of the tenant is in place.",
      ),
    ),
    namespaces: Type.Optional(
      ListSet(Type.String({ description: "A namespace name.", maxLength: MAX_NAMESPACE_NAME }), {
        description: "Every namespace of the tenant, declared or created by owners.",
        maxItems: 10000,
      }),
    ),
    namespaceCount: Type.Optional(
      Type.Integer({ description: "Number of namespaces in namespaces.", format: "int32", minimum: 0 }),
    ),
    ownerSummary: Type.Optional(
      Type.String({ description: "The owners on one line, e.g. `User/alice, Group/devs`.", maxLength: 1024 }),
    ),
    usage: Type.Optional(
      Type.Object(
        {
          hard: Type.Optional(ResourceList("The tenant's aggregate limits.", { checkNames: false })),
          used: Type.Optional(
            ResourceList("What the tenant's namespaces use now, per limited resource.", {
              checkNames: false,
            }),
          ),
          summary: Type.Optional(
            Type.String({
              description:
                "The most used resources on one short line, e.g. `pods 95% (19/20), requests.cpu 40%, +13 more`.",
              maxLength: 1024,
            }),
          ),
        },
        { description: "Usage against the tenant's quota." },
      ),
    ),
  },
  { description: "Observed state of the tenant, written by the tenant controller." },
);
export type TenantStatus = Static<typeof TenantStatusSchema>;

export const TenantSchema = ResourceSchema({
  description:
    "A Tenant groups namespaces under common owners, quota, network isolation, node pool and workload policy.",
  name: {
    description: "Tenant name: a DNS label; prefixes the names of its declared namespaces.",
    maxLength: MAX_NAMESPACE_NAME,
    pattern: DNS1123_LABEL,
  },
  spec: TenantSpecSchema,
  status: TenantStatusSchema,
  rules: [
    {
      rule: `!has(self.spec.namespaces) || self.spec.namespaces.all(ns, size(self.metadata.name) + 1 + size(ns.name) <= ${MAX_NAMESPACE_NAME})`,
      message: `every namespace <tenant>-<name> must fit in ${MAX_NAMESPACE_NAME} characters: shorten the tenant name or the namespace name`,
      fieldPath: ".spec.namespaces",
      reason: "FieldValueInvalid",
    },
  ],
});
export type Tenant = Static<typeof TenantSchema>;
