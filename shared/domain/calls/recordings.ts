import { putObject } from '../../adapters/kb-objects';
import { presignGet } from '../../adapters/presigned-urls';

/**
 * Call recordings in the bucket, under the organization's prefix:
 * `orgs/<org>/recordings/<callId>.wav`, each tagged RECORDING_TAG. A lifecycle rule can select
 * objects by prefix or tag but not by a wildcard in mid-key, so the stack's rule (lib/storage.ts)
 * deletes objects carrying the tag RECORDING_RETENTION_DAYS after they were written.
 */
export const RECORDING_TAG = { kind: 'call-recording' } as const;
export const RECORDING_RETENTION_DAYS = 90;
/** How long a `recording_url` works: a fresh link is made on every read. */
export const RECORDING_LINK_SECONDS = 15 * 60;

export const recordingKeys = {
  recording: (orgId: string, callId: string) => `orgs/${orgId}/recordings/${callId}.wav`,
  /** The object key patterns the functions that store or link recordings are granted. */
  grantPatterns: ['orgs/*/recordings/*'],
};

/** Stores a recording (idempotent: the key is the call's). */
export async function storeRecording(orgId: string, callId: string, audio: Uint8Array, contentType = 'audio/wav'): Promise<string> {
  const key = recordingKeys.recording(orgId, callId);
  await putObject(key, audio, contentType, { ...RECORDING_TAG });
  return key;
}

/** The call's download link, valid RECORDING_LINK_SECONDS, or null without a recording. */
export async function recordingUrl(key: string | undefined | null): Promise<string | null> {
  return key ? presignGet(key, RECORDING_LINK_SECONDS) : null;
}
