import { Injectable } from '@nestjs/common';
import { ScheduledJob } from '../../scheduling/scheduled-job.js';
import { DeliveryPartitions } from '../store/delivery-partitions.js';

// Far more often than any sensible DELIVERY_PARTITIONS_AHEAD, so a missed run or two costs nothing.
const EVERY_MS = 3_600_000;

/** Partition upkeep (DESIGN 9): the partitions of deliveries and their attempts exist DELIVERY_PARTITIONS_AHEAD ahead. */
@Injectable()
export class DeliveryPartitionUpkeep {
  constructor(private readonly partitions: DeliveryPartitions) {}

  /** Creates the partitions missing from now to DELIVERY_PARTITIONS_AHEAD from now; returns their names. */
  @ScheduledJob({ name: 'create-delivery-partitions', every: () => EVERY_MS })
  createAhead(): Promise<string[]> {
    return this.partitions.ensure();
  }
}
