/**
 * The provider SPI: what tenantry asks of any cloud that builds worker nodes' machines. Every
 * implementation runs the one conformance suite in test/nodes/provider-conformance.ts.
 */

/** A machine size. */
export interface Flavor {
  name: string;
  vcpus: number;
  memoryMiB: number;
  diskGiB?: number;
}

/** Which node a machine belongs to: a machine is the node's only if all three match. */
export interface MachineOwner {
  /** The WorkerNode's name: the machine's (and the Node's) name. */
  name: string;
  /** The WorkerNode's uid: a node deleted and asked for again under the same name is another node. */
  uid: string;
  /** The cluster's id (tenantry's cluster identity): several clusters may share one cloud project. */
  clusterId: string;
}

export interface MachineRequest extends MachineOwner {
  flavor: string;
  image?: string;
  keyPair?: string;
  securityGroups?: string[];
  availabilityZone?: string;
  /** What the machine runs at first boot: a cloud-config document with the join configuration. */
  userData: string;
}

/**
 * Where a machine is, in the provider's words (`status`) and in tenantry's (`state`): Building
 * until it runs, Active while it does, Error when the provider gave up on it, Stopped when it is
 * not running (shut off, suspended), Deleting while it goes.
 */
export type MachineState = "Building" | "Active" | "Error" | "Stopped" | "Deleting";

export interface Machine extends MachineOwner {
  id: string;
  state: MachineState;
  /** The provider's own word for it (Nova: BUILD, ACTIVE, ERROR, …). */
  status: string;
  /** Every address the provider reports, IPv4 first. */
  addresses: string[];
  /** Why it is in Error, in the provider's words. */
  message?: string;
}

/** A failure of the provider. `permanent` ones fail the node; others are retried. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    /**
     * The provider's HTTP status or error code, when it gave one (not `code`: that would make it
     * read as a Kubernetes API error, whose message is its status).
     */
    readonly providerStatus?: number,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

export interface MachineProvider {
  /** `simulated`, `openstack`. */
  readonly type: string;
  listFlavors(signal?: AbortSignal): Promise<Flavor[]>;
  /** Asks for a machine; it may still be Building when this returns. */
  createMachine(request: MachineRequest, signal?: AbortSignal): Promise<Machine>;
  /**
   * The node's machine, or undefined when there is none: what a restarted controller uses to find
   * a machine it asked for before it could write that down.
   */
  findMachine(owner: MachineOwner, signal?: AbortSignal): Promise<Machine | undefined>;
  /** The machines of a cluster's nodes, for finding the ones whose node is gone. */
  listMachines(clusterId: string, signal?: AbortSignal): Promise<Machine[]>;
  /** Deletes the machine; deleting one that is already gone is not an error. */
  deleteMachine(machine: Pick<Machine, "id" | "name">, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `listener` with a node's name when its machine changes, for providers that can tell
   * (otherwise tenantry polls). Returns the unsubscribe function.
   */
  watch?(listener: (name: string) => void): () => void;
  close?(): void;
}

/** The first IPv4 address among `addresses`. */
export function firstIpv4(addresses: readonly string[]): string | undefined {
  return addresses.find((a) => /^\d{1,3}(\.\d{1,3}){3}$/.test(a));
}
