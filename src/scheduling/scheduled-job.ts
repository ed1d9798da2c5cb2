import { DiscoveryService } from '@nestjs/core';
import type { JobSchedulerTemplateOptions } from 'bullmq';
import type { AppConfig } from '../core/config/config.js';

/** The queue of scheduled work, beside the deliveries queue under the same QUEUE_PREFIX. */
export const MAINTENANCE_QUEUE = 'maintenance';

export interface ScheduledJobOptions {
  /** The job scheduler's id and its jobs' name, as the queue dashboard shows them. */
  name: string;
  /** How often it runs, across all workers. */
  every: (config: AppConfig) => number;
}

/** A scheduled run; `signal` is aborted when the process shuts down, so the run stops at its next step. */
export type ScheduledRun = (signal?: AbortSignal) => Promise<unknown>;

/** Each run's job: a failed run is tried again after 1, 2, 4 and 8 s; the last runs stay for the dashboard. */
export const SCHEDULED_JOB_OPTIONS: JobSchedulerTemplateOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { count: 1_000 },
  removeOnFail: { count: 1_000 },
};

export const SCHEDULED_JOB = DiscoveryService.createDecorator<ScheduledJobOptions>();

/**
 * Makes the method a job scheduler of the maintenance queue: exactly one run per interval across all
 * workers, in the processes that deliver (SchedulingModule). A run that throws is retried by the queue.
 */
export function ScheduledJob(options: ScheduledJobOptions) {
  return <T extends ScheduledRun>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<T>) =>
    SCHEDULED_JOB(options)(target, key, descriptor);
}
