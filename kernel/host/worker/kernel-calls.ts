import type { SlotMessage, SlotReport } from '../protocol/messages.ts';
import { CapabilityError } from './capabilities/types.ts';
import type { DeliveredSecrets } from './delivered-secrets.ts';

/**
 * A plugin's calls to kernel-served capabilities, each answered by the kernel's `reply`. A reply
 * may deliver secret values (kept out of everything the plugin sends from then on), and a
 * refusal arrives as the kernel's status and code.
 */
export class KernelCalls {
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  private next = 1;
  private readonly send: (report: SlotReport) => void;
  private readonly delivered: DeliveredSecrets;

  constructor(send: (report: SlotReport) => void, delivered: DeliveredSecrets) {
    this.send = send;
    this.delivered = delivered;
  }

  call(invocationId: string, capability: string, method: string, args: unknown[]): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // Kernel calls carry the plugin's words onwards (a pause reason, a service's input, a stream event).
      this.send({ t: 'call', id, invocationId, capability, method, args: this.delivered.value(args) });
    });
  }

  reply(message: Extract<SlotMessage, { t: 'reply' }>): void {
    const waiter = this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id);
    if (message.secrets?.length) this.delivered.add(message.secrets);
    if (message.ok) waiter.resolve(message.json === undefined ? undefined : JSON.parse(message.json));
    else waiter.reject(new CapabilityError(message.error?.status ?? 500, message.error?.code ?? 'kernel_error', message.error?.message ?? 'kernel call failed'));
  }
}
