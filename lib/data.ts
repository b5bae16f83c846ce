import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { tableDefinition } from '../shared/db/table-definition';

/**
 * The one table (single-table design), built from the same definition the local runtime uses,
 * so keys and indexes cannot drift between the two.
 */
export class Data extends Construct {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const string = dynamodb.AttributeType.STRING;
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: tableDefinition.partitionKey, type: string },
      sortKey: { name: tableDefinition.sortKey, type: string },
      // On demand: traffic follows campaigns (bursty), and there is no capacity to plan or to waste.
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: tableDefinition.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // The AWS-owned key costs nothing and needs no key policy; a customer key would only add
      // audit of key use, which this table does not need (secrets inside it are KMS-encrypted
      // by the application with the secrets key, see storage.ts).
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of tableDefinition.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: string },
        sortKey: { name: index.sortKey, type: string },
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
  }
}
