import { Injectable } from '@nestjs/common';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { DeliveryPartitions } from '../store/delivery-partitions.js';

// Hourly, at least twice within DELIVERY_PARTITIONS_AHEAD: a missed run costs nothing.
const EVERY_MS = 3_600_000;

/** Partition upkeep (DESIGN 9): the partitions of deliveries and their attempts exist DELIVERY_PARTITIONS_AHEAD ahead. */
@Injectable()
export class DeliveryPartitionUpkeep {
  constructor(private readonly partitions: DeliveryPartitions) {}

  /** Creates the partitions missing from now to DELIVERY_PARTITIONS_AHEAD from now; returns their names. */
  @ScheduledJob({
    name: 'create-delivery-partitions',
    every: (config) => Math.min(EVERY_MS, config.deliveryPartitions.aheadMs / 2),
  })
  createAhead(): Promise<string[]> {
    return this.partitions.ensure();
  }
}
