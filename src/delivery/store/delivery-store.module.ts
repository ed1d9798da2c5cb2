import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DeliveryAttemptEntity, DeliveryEntity } from '../delivery.entity.js';
import { DeliveryPartitions } from './delivery-partitions.js';
import { DeliveryStore } from './delivery-store.js';

/** The owner of `deliveries` and `delivery_attempts`, for every module that changes a delivery. */
@Module({
  imports: [TypeOrmModule.forFeature([DeliveryEntity, DeliveryAttemptEntity])],
  providers: [DeliveryStore, DeliveryPartitions],
  exports: [DeliveryStore, DeliveryPartitions],
})
export class DeliveryStoreModule {}
