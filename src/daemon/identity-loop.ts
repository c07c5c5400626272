/**
 * IdentityLoop keeps who this VM is: its name and resource id from IMDS instance metadata,
 * with what the configuration says taking precedence. It reads at start, every 6 hours, and
 * every minute after a failed read. When the configuration names everything instance
 * metadata would tell, IMDS is never asked.
 */
import type { Logger } from 'pino';
import type { ImdsClient } from '../imds/client.ts';
import { identityFrom, type IdentityOverride, type VmIdentity } from '../imds/identity.ts';
import type { BridgeState } from '../imds/view.ts';
import { errorFields } from '../lib/errors.ts';
import { sleep } from '../lib/time.ts';

const IDENTITY_REFRESH_MS = 6 * 3600_000;

export interface IdentityLoopOptions {
  readonly client: ImdsClient;
  readonly logger: Logger;
  /** What the configuration says (identity.*). */
  readonly override: IdentityOverride;
  /** How soon a failed read is tried again. */
  readonly retryMs: number;
  /** The read model, whose `vm` this loop writes. */
  readonly state: BridgeState;
  /** Called when the name changes or becomes known (the events still listed are routed again). */
  readonly onChange?: (before: VmIdentity, after: VmIdentity) => void;
}

/** While the name is not known, the first retries come sooner: 1 s, 2 s, 4 s, ... up to retryMs. */
const FIRST_RETRY_MS = 1000;

export class IdentityLoop {
  readonly #o: IdentityLoopOptions;
  #warned = false;

  constructor(options: IdentityLoopOptions) {
    this.#o = options;
    options.state.vm = identityFrom(null, options.override);
  }

  get current(): VmIdentity {
    return this.#o.state.vm;
  }

  /**
   * complete: the configuration names everything instance metadata would tell (the name, the
   * resource id, subscription, resource group and location; a scale set name and a zone only
   * exist on some VMs), so the bridge never asks IMDS who it is.
   */
  get complete(): boolean {
    const i = this.#o.override;
    return [i.name, i.resourceId, i.subscriptionId, i.resourceGroupName, i.location].every((v) => v !== undefined);
  }

  /** refresh reads instance metadata once; false when the read failed (the last identity stays). */
  async refresh(signal: AbortSignal): Promise<boolean> {
    if (this.complete) return true;
    const { client, logger, override } = this.#o;
    try {
      const compute = await client.getInstanceCompute({ signal });
      const next = identityFrom(compute, override);
      if (next.name !== this.#o.state.vm.name || next.resourceId !== this.#o.state.vm.resourceId || this.#o.state.vm.origin !== 'imds') {
        logger.info({ vmName: next.name, resourceId: next.resourceId, origin: next.origin }, 'VM identity');
      }
      const before = this.#o.state.vm;
      this.#o.state.vm = next;
      this.#warned = false;
      if (before.name !== next.name || before.nameKnown !== next.nameKnown) this.#o.onChange?.(before, next);
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      // said once per outage; the retries that follow are debug lines
      const fields = { ...errorFields(err), vmName: this.#o.state.vm.name, origin: this.#o.state.vm.origin };
      if (this.#warned) {
        logger.debug(fields, 'still cannot read the VM identity from IMDS');
      } else {
        this.#warned = true;
        logger.warn(
          fields,
          this.#o.state.vm.nameKnown
            ? 'cannot read the VM identity from IMDS; keeping what is known (said once until it succeeds)'
            : "cannot read the VM identity from IMDS: until it can, every event is treated as this VM's, nothing is approved on its own, and /readyz says not ready (said once until it succeeds)",
        );
      }
      return false;
    }
  }

  /** run refreshes until `signal` aborts: every 6 hours, or `retryMs` after a failure. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.complete) return;
    let ok = this.#o.state.vm.origin === 'imds';
    let failures = 0;
    while (!signal.aborted) {
      const retry = this.#o.state.vm.nameKnown ? this.#o.retryMs : Math.min(this.#o.retryMs, FIRST_RETRY_MS * 2 ** Math.min(failures, 16));
      try {
        await sleep(ok ? IDENTITY_REFRESH_MS : retry, signal);
      } catch {
        return;
      }
      ok = await this.refresh(signal);
      failures = ok ? 0 : failures + 1;
    }
  }
}
