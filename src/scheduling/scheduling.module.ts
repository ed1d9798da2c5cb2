import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { MaintenanceQueueModule } from './maintenance-queue.module.js';
import { ScheduledJobsWorker } from './scheduled-jobs.worker.js';

/** Runs the process's @ScheduledJob methods: only processes that deliver import it. */
@Module({
  imports: [DiscoveryModule, MaintenanceQueueModule],
  providers: [ScheduledJobsWorker],
})
export class SchedulingModule {}
