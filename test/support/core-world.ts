/**
 * The core wired to in-memory adapters for unit tests: the memory store, a fake clock, a deterministic
 * Random, the real code vault (node:crypto only), a recording workflow and a scripted provider. No I/O.
 */
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { MemoryStore } from '../../functions/adapters/memory/store';
import type { CheckDeps } from '../../functions/core/check';
import type { DeliveryDeps } from '../../functions/core/delivery';
import type { Service } from '../../functions/core/model';
import type { DeliveryInput, DeliveryWorkflow, Random } from '../../functions/core/ports';
import type {
  OutboundMessage,
  Provider,
  ProviderAnswer,
  ProviderRegistry,
  Receipt,
  ReceiptRequest,
} from '../../functions/core/providers';
import { CHANNELS, type Channel } from '../../functions/core/routing';
import { sendVerification, type SendDeps, type SendRequest } from '../../functions/core/send';
import { DEFAULT_SETTINGS, type Settings } from '../../functions/core/settings';
import type { SidPrefix } from '../../functions/core/sids';
import { FakeClock } from './fake-clock';

export const T0 = new Date('2026-11-21T12:00:00.000Z');
/** A UK mobile: every channel reaches it, cheapest first sna, viber, whatsapp, rcs, sms; price 600. */
export const UK_MOBILE = '+447400123456';

/** Codes from a queue (then 123456), SIDs counting up: every run gives the same values. */
class SequenceRandom implements Random {
  private count = 0;
  readonly codes: string[] = [];

  code(): string {
    return this.codes.shift() ?? '123456';
  }

  sid(prefix: SidPrefix): string {
    this.count += 1;
    return `${prefix}${this.count.toString(16).padStart(32, '0')}`;
  }
}

class RecordingWorkflow implements DeliveryWorkflow {
  readonly started: DeliveryInput[] = [];
  failing = false;

  async start(input: DeliveryInput): Promise<void> {
    if (this.failing) throw new Error('StartExecution failed');
    this.started.push(input);
  }
}

export type ProviderBehaviour = 'accept' | 'reject' | 'error';

/**
 * One provider for every channel, answering as scripted per channel (accept by default). A receipt request is
 * believed when its header `x-signature` is `valid`; its body is the receipt as JSON.
 */
export class ScriptedProvider implements Provider, ProviderRegistry {
  readonly name = 'carrier';
  readonly sent: OutboundMessage[] = [];
  readonly behaviour: Partial<Record<Channel, ProviderBehaviour>> = {};
  /** The code life each channel needs (none unless a test sets it). */
  minimumLifeSeconds?: (channel: Channel) => number;

  async send(message: OutboundMessage): Promise<ProviderAnswer> {
    const behaviour = this.behaviour[message.channel] ?? 'accept';
    if (behaviour === 'error') throw new Error('carrier time-out');
    this.sent.push(message);
    if (behaviour === 'reject') return { status: 'rejected', reason: 'number rejected' };
    return { status: 'accepted', messageId: `msg-${this.sent.length}` };
  }

  parseReceipt(request: ReceiptRequest): Receipt | undefined {
    if (request.headers['x-signature'] !== 'valid') return undefined;
    return JSON.parse(request.body) as Receipt;
  }

  forChannel(): Provider {
    return this;
  }

  byName(name: string): Provider | undefined {
    return name === this.name ? this : undefined;
  }

  /** A signed receipt for a message this provider sent. */
  static receipt(receipt: Receipt, signature = 'valid'): ReceiptRequest {
    return { headers: { 'x-signature': signature }, body: JSON.stringify(receipt) };
  }
}

export interface CoreWorld {
  store: MemoryStore;
  clock: FakeClock;
  random: SequenceRandom;
  vault: CryptoCodeVault;
  workflow: RecordingWorkflow;
  provider: ScriptedProvider;
  settings: Settings;
  sendDeps: SendDeps;
  checkDeps: CheckDeps;
  deliveryDeps: DeliveryDeps;
  /** A service with a default template, all five channels and $100 unless told otherwise. */
  addService(changes?: Partial<Service>): Service;
  send(request: Partial<SendRequest> & { serviceSid: string }): ReturnType<typeof sendVerification>;
}

/** The master key of the world's vault. */
export const CORE_MASTER_KEY = 'core-unit-test-master-key';

export function coreWorld(settings: Partial<Settings> = {}): CoreWorld {
  const store = new MemoryStore();
  const clock = new FakeClock(T0);
  const random = new SequenceRandom();
  const vault = new CryptoCodeVault(CORE_MASTER_KEY);
  const workflow = new RecordingWorkflow();
  const provider = new ScriptedProvider();
  const all: Settings = { ...DEFAULT_SETTINGS, ...settings };
  const sendDeps: SendDeps = {
    store,
    workflow,
    vault,
    random,
    clock,
    settings: all,
    allowedChannels: CHANNELS,
  };
  return {
    store,
    clock,
    random,
    vault,
    workflow,
    provider,
    settings: all,
    sendDeps,
    checkDeps: { store, vault, clock },
    deliveryDeps: { store, providers: provider, vault, clock, settings: all },
    addService(changes = {}) {
      const service: Service = {
        sid: random.sid('VA'),
        name: 'Unit',
        balance: 1_000_000,
        enabledChannels: [...CHANNELS],
        rules: { blockedCountries: [], blockedPrefixes: [] },
        prices: {},
        defaultTemplate: { sid: random.sid('HX'), body: 'Your code is {code}.', locale: 'en' },
        createdAt: clock.now().toISOString(),
        webhookEndpoints: [],
        ...changes,
      };
      store.putService(service);
      return service;
    },
    send: (request) => sendVerification(sendDeps, { to: UK_MOBILE, ...request }),
  };
}
