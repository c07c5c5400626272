/**
 * The bridge's read model: what it knows of its VM right now, in one object its parts share
 * instead of asking each other through callbacks. Each fact has one writer: the identity loop
 * writes `vm`, the poll loop `document` and `goodReads`, the approval endpoints
 * `approvalServerUrl`. The approval service, the auto-approver, the endpoints, the approval
 * inbox, the links and the sinks only read it.
 */
import type { VmIdentity } from './identity.ts';
import type { EventsDocument } from './wire.ts';

export interface BridgeView {
  /** Who this VM is (the configuration's override first, then instance metadata). */
  readonly vm: VmIdentity;
  /** The last Scheduled Events document committed, or read back from the store at start; null before either. */
  readonly document: EventsDocument | null;
  /** Successful IMDS reads since start. */
  readonly goodReads: number;
  /** The approval server's own URL once it listens, else null. */
  readonly approvalServerUrl: string | null;
}

/** BridgeState is the writable read model; the parts that own a fact get it, the others a BridgeView. */
export class BridgeState implements BridgeView {
  vm: VmIdentity;
  document: EventsDocument | null = null;
  goodReads = 0;
  approvalServerUrl: string | null = null;
  constructor(vm: VmIdentity) {
    this.vm = vm;
  }
}
