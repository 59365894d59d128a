/**
 * The gossipsub side channel of the libp2p transport: `publish(topic, bytes)`
 * and `subscribe(topic, handler)`, for fan-out of live deltas of a name to
 * many peers. It is best effort (a message can be lost, duplicated across a
 * reconnect, or arrive out of order); anti-entropy over the direct Concord
 * streams is what guarantees that nothing is missed.
 *
 * Messages are signed by their origin (gossipsub's StrictSign policy), so the
 * handler's `from` is proved; with an allowlist, a message whose origin is not
 * on it is rejected by a topic validator (neither delivered nor forwarded).
 * A subscriber may also decide, per message, whether this node forwards it
 * to its own neighbours (`relay`): a message it keeps is delivered here and
 * neither forwarded nor advertised (gossipsub's `Ignore`).
 */
import { TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { Unsubscribe } from '../../crdt/emitter.ts'
import type { PeerAllowlist } from './allowlist-gater.ts'

/**
 * Receives one pub/sub message: its payload, the PeerId of its origin, and
 * whether this node forwards it to its neighbours (see {@link SubscribeOptions}).
 */
export type PubSubHandler = (data: Uint8Array, from: string, relayed: boolean) => void

/** Options of {@link PubSubChannel.subscribe}. */
export interface SubscribeOptions {
  /**
   * Whether this node may forward a received message (`from`: its origin,
   * `via`: the neighbour it came from). False keeps it here: delivered to
   * the handlers, neither forwarded nor advertised. Default: forward. With
   * several subscribers of a topic, a message is forwarded only if all agree.
   */
  readonly relay?: (data: Uint8Array, from: string, via: string) => boolean
}

/** A topic-based publish/subscribe channel between peers. */
export interface PubSubChannel {
  /**
   * Publishes `data` on `topic`; resolves with the number of peers it was sent
   * to directly (0 when no peer subscribes: not an error, the message is lost).
   * @throws ConcordError `CONCORD_LIMIT_EXCEEDED` above the message limit,
   * `CONCORD_CLOSED` once the transport stopped.
   */
  publish(topic: string, data: Uint8Array): Promise<number>
  /** Calls `handler` for every message on `topic` from another peer; returns the unsubscribe. */
  subscribe(topic: string, handler: PubSubHandler, options?: SubscribeOptions): Unsubscribe
  /** PeerIds of the connected peers known to subscribe to `topic`. */
  subscribers(topic: string): string[]
}

/** {@link PubSubChannel} over a running gossipsub service. */
export class GossipChannel implements PubSubChannel {
  private readonly gossip: GossipSub
  private readonly allow: PeerAllowlist | undefined
  private readonly maxMessageBytes: number
  private readonly handlers = new Map<string, Map<PubSubHandler, SubscribeOptions>>()
  private stopped = false
  /** Messages delivered and dropped, for logs and tests. */
  readonly stats = { delivered: 0, rejected: 0 }

  constructor(gossip: GossipSub, options: { allow?: PeerAllowlist; maxMessageBytes: number }) {
    this.gossip = gossip
    this.allow = options.allow
    this.maxMessageBytes = options.maxMessageBytes
    gossip.addEventListener('message', (event) => this.onMessage(event.detail))
  }

  async publish(topic: string, data: Uint8Array): Promise<number> {
    if (this.stopped) throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    if (data.byteLength > this.maxMessageBytes) {
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `pub/sub message of ${data.byteLength} bytes is over the limit of ${this.maxMessageBytes} bytes`)
    }
    const result = await this.gossip.publish(topic, data)
    return result.recipients.length
  }

  subscribe(topic: string, handler: PubSubHandler, options: SubscribeOptions = {}): Unsubscribe {
    if (this.stopped) throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    let set = this.handlers.get(topic)
    if (!set) {
      this.handlers.set(topic, (set = new Map()))
      this.gossip.topicValidators.set(topic, (via, message) => this.validate(message, via.toString()))
      this.gossip.subscribe(topic)
    }
    set.set(handler, options)
    return () => {
      const current = this.handlers.get(topic)
      if (!current?.delete(handler) || current.size > 0) return
      this.handlers.delete(topic)
      if (this.stopped) return
      this.gossip.unsubscribe(topic)
      this.gossip.topicValidators.delete(topic)
    }
  }

  subscribers(topic: string): string[] {
    if (this.stopped) return []
    return this.gossip.getSubscribers(topic).map((peer) => peer.toString())
  }

  /** Drops every handler; later calls fail with `CONCORD_CLOSED`. */
  stop(): void {
    this.stopped = true
    this.handlers.clear()
  }

  private admit(message: Message): boolean {
    if (message.type !== 'signed') return false
    return this.allow === undefined || this.allow.has(message.from.toString())
  }

  /** The topic validator: reject what the allowlist refuses; keep here (deliver, do not forward) what a subscriber may not relay. */
  private validate(message: Message, via: string): TopicValidatorResult {
    if (!this.admit(message)) return TopicValidatorResult.Reject
    const set = this.handlers.get(message.topic)
    if (!set || message.type !== 'signed') return TopicValidatorResult.Accept
    const from = message.from.toString()
    for (const { relay } of set.values()) {
      let forward = true
      try {
        forward = relay === undefined || relay(message.data, from, via)
      } catch {
        forward = false
      }
      if (!forward) {
        // Ignored messages are neither dispatched nor forwarded: deliver it here ourselves.
        this.deliver(message, false)
        return TopicValidatorResult.Ignore
      }
    }
    return TopicValidatorResult.Accept
  }

  private onMessage(message: Message): void {
    this.deliver(message, true)
  }

  private deliver(message: Message, relayed: boolean): void {
    const set = this.handlers.get(message.topic)
    if (!set || this.stopped) return
    if (!this.admit(message) || message.data.byteLength > this.maxMessageBytes) {
      this.stats.rejected++
      return
    }
    this.stats.delivered++
    const from = message.type === 'signed' ? message.from.toString() : ''
    for (const handler of [...set.keys()]) {
      try {
        handler(message.data, from, relayed)
      } catch (error) {
        console.error(`concord: a pub/sub handler for "${message.topic}" threw`, error)
      }
    }
  }
}
