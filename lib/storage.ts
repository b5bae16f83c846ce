import { RECORDING_RETENTION_DAYS, RECORDING_TAG } from '../shared/domain/calls/recordings';
import { UPLOADS_PREFIX, UPLOAD_RETENTION_DAYS } from '../shared/domain/rag/object-keys';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/**
 * The bucket for call recordings and knowledge-base documents, the bucket that receives its
 * access logs, and the KMS key that encrypts secrets (SIP passwords, integration keys, webhook
 * secrets) before they are written to the table.
 */
export class Storage extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogsBucket: s3.Bucket;
  readonly secretsKey: kms.Key;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    // Access logs are delivered under a bucket policy, not an ACL (ACLs are off: objects are
    // owned by the bucket owner). cdk.json enables this flag for the app; setting it here too
    // keeps the construct correct in an app that lacks it.
    this.node.setContext('@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy', true);

    // Recordings are personal data: who read or deleted which object is worth keeping.
    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED, // the only encryption S3 log delivery writes to
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.accessLogsBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This bucket is the destination of the server access logs; logging it into itself would log its own log writes.',
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      // SSE-S3 rather than a customer key: objects are only reached through our functions
      // (presigned URLs included), and SSE-KMS would add a KMS call and cost per object.
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      // Versions guard recordings and documents against an overwrite or delete by mistake;
      // old versions go after a month so they do not cost forever.
      versioned: true,
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        { id: 'expire-old-versions', noncurrentVersionExpiration: Duration.days(30) },
        // Presigned uploads that were never ingested (ingestion keeps its own copy of the original).
        { id: 'expire-uploads', prefix: UPLOADS_PREFIX, expiration: Duration.days(UPLOAD_RETENTION_DAYS) },
        // Call recordings (orgs/<org>/recordings/…, each tagged on write: a rule cannot match a
        // wildcard in mid-key) are kept RECORDING_RETENTION_DAYS, then deleted.
        { id: 'expire-recordings', tagFilters: { ...RECORDING_TAG }, expiration: Duration.days(RECORDING_RETENTION_DAYS) },
      ],
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'bucket/',
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'Envelope encryption of secrets at rest (SIP passwords, integration keys, webhook secrets)',
      enableKeyRotation: true,
      // Secrets encrypted with a deleted key are lost for good.
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
