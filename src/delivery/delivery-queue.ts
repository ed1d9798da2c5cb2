import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';

export const DELIVERY_QUEUE = 'deliveries';
export const DELIVER_JOB = 'deliver';

export interface DeliverJobData {
  deliveryId: string;
  trigger: 'scheduled' | 'manual';
  /** host:port of the webhook url (webhooks are never updated), for the per-destination in-flight cap. */
  destination: string;
  /** The webhook's url, so the worker connects before it claims; absent in jobs of older versions. */
  url?: string;
  /** For the per-workspace share of a worker's slots; absent in jobs of older versions. */
  workspaceId?: string;
}

export interface DeliveryToEnqueue {
  deliveryId: string;
  url: string;
  workspaceId: string;
  /** Defaults to the delivery id; a manual retry uses its own, as the last job may not be gone yet. */
  jobId?: string;
}

export const destinationOf = (url: string): string => new URL(url).host;

/** Postgres decides when a delivery is done; the job only carries the id, retried until then. */
export const DELIVER_JOB_OPTIONS: JobsOptions = {
  attempts: 1_000_000,
  backoff: { type: 'delivery' },
  removeOnComplete: true,
  removeOnFail: true,
};

// A request never waits long on Redis: what is not enqueued by then is left to the sweeper.
const ENQUEUE_TIMEOUT_MS = 2_000;

function withTimeout<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Producer side of the delivery queue: one job per delivery, jobId = delivery id. */
@Injectable()
export class DeliveryQueue {
  private readonly logger = new Logger('DeliveryQueue');

  constructor(@InjectQueue(DELIVERY_QUEUE) readonly queue: Queue<DeliverJobData>) {
    // Without a listener BullMQ prints every Redis reconnect failure to stderr, outside the JSON log.
    queue.on('error', (error) => this.logger.warn(`Redis (REDIS_URL) connection error: ${error.message}`));
  }

  /**
   * Adds jobs for deliveries already committed to Postgres. A job that exists is left alone, and a
   * failure here loses nothing: the sweeper enqueues due pending deliveries that have no job.
   */
  async enqueue(deliveries: DeliveryToEnqueue[], trigger: DeliverJobData['trigger'] = 'scheduled'): Promise<void> {
    if (deliveries.length === 0) return;
    try {
      await withTimeout(
        ENQUEUE_TIMEOUT_MS,
        this.queue.addBulk(
          deliveries.map(({ deliveryId, url, workspaceId, jobId }) => ({
            name: DELIVER_JOB,
            data: { deliveryId, trigger, destination: destinationOf(url), url, workspaceId },
            opts: { ...DELIVER_JOB_OPTIONS, jobId: jobId ?? deliveryId },
          })),
        ),
      );
    } catch (error) {
      this.logger.warn(
        `Enqueue of ${deliveries.length} deliveries deferred to the sweeper: ${(error as Error).message}`,
      );
    }
  }

  /** Drops the jobs of cancelled deliveries; one that is running finds its delivery cancelled. */
  async remove(deliveryIds: string[]): Promise<void> {
    const removals = Promise.all(deliveryIds.map((id) => this.queue.remove(id).catch(() => 0)));
    await withTimeout(ENQUEUE_TIMEOUT_MS, removals).catch(() => undefined);
  }
}
