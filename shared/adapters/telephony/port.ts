/**
 * The telephony port: what the platform asks of a carrier. Two adapters implement it: the
 * simulated carrier (the local default, deterministic) and Twilio (TELEPHONY_PROVIDER=twilio).
 * Adapters throw our typed errors: UnprocessableError when the carrier refuses a request about
 * a number (not available, already released), UnavailableError when the carrier itself fails.
 */

/** Which adapter a process uses (TELEPHONY_PROVIDER). */
export type TelephonyProviderName = 'simulated' | 'twilio';

export interface NumberCapabilities {
  voice: boolean;
  sms: boolean;
  mms: boolean;
}

/** A number the carrier offers, with its prices (USD). */
export interface AvailableNumber {
  phone_number: string;
  country: string;
  locality: string;
  region: string;
  /** Monthly price. */
  price: number;
  per_minute_price_inbound: number;
  per_minute_price_outbound: number;
  capabilities: NumberCapabilities;
}

export interface SearchQuery {
  /** ISO 3166 alpha-2, upper case. */
  country: string;
  /** Digits: the NANP area code, or the national area code without its trunk prefix elsewhere. */
  areaCode?: string;
  /** Digits the national number must contain. */
  contains?: string;
  limit: number;
}

/** A number now held at the carrier; `providerRef` is what release needs (Twilio's PN… sid). */
export interface PurchasedNumber {
  phoneNumber: string;
  providerRef: string;
}

export type CallStatus = 'queued' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled';

export interface PlaceCallInput {
  from: string;
  to: string;
  /** Where the carrier fetches call instructions (Twilio: TwiML URL). */
  answerUrl?: string;
  /** Where the carrier posts status events. */
  statusCallbackUrl?: string;
  /** Ring this long before giving up. */
  timeoutSeconds?: number;
  /** Record the call; the carrier posts the finished recording here (Twilio: RecordingStatusCallback). */
  recordingCallbackUrl?: string;
  /**
   * Detect answering machines before the call instructions run, waiting for the greeting's end so
   * the agent can leave a message (Twilio: MachineDetection=DetectMessageEnd; the instructions
   * request and the status callbacks carry AnsweredBy, and a machine ends as `voicemail`).
   */
  detectMachine?: boolean;
  /** How long detection may listen before it decides (Twilio: MachineDetectionTimeout, 3–59 s). */
  machineDetectionTimeoutMs?: number;
  /**
   * With `detectMachine`: detect asynchronously instead. The call's instructions are requested at
   * once (no AnsweredBy), so the callee hears them without the seconds of silence synchronous
   * detection leaves; the result is posted to `callbackUrl` when known (Twilio:
   * MachineDetection=Enable, AsyncAmd=true, AsyncAmdStatusCallback: AccountSid, CallSid,
   * AnsweredBy, MachineDetectionDuration).
   */
  asyncMachineDetection?: { callbackUrl: string };
}

/** A call as the carrier holds it now (fetchCall). */
export interface CarrierCall {
  providerCallId: string;
  status: CallStatus;
  /** Seconds connected, once the call ended. */
  durationSec?: number;
  answeredBy?: string;
}

/** One status change of a call, as the carrier reports it. */
export interface CallStatusEvent {
  providerCallId: string;
  status: CallStatus;
  /** Seconds connected; set on `completed`. */
  durationSec?: number;
  /** Who answered, when the carrier detects it (Twilio `AnsweredBy`: `human`, `machine_start`, …). */
  answeredBy?: string;
  at: string;
}

export interface PlacedCall {
  providerCallId: string;
  status: CallStatus;
  /**
   * Events already known when the call is placed. The simulated carrier decides a call's whole
   * course up front and returns it here; a real carrier returns none and posts them later to
   * `statusCallbackUrl`, where `parseStatusEvent` reads them.
   */
  events: CallStatusEvent[];
}

/** What the voice runtime may change on a live call. */
/**
 * What the platform may change on a live call: new instructions given (`twiml`), new instructions
 * to fetch (`url`: the carrier requests it, signed, as it does a call's first instructions), or a hang-up.
 */
export type LiveCallChange = { twiml: string } | { url: string } | { hangUp: true };

export interface TelephonyPort {
  readonly name: TelephonyProviderName;
  /** Numbers the carrier offers now, at most `limit`. */
  searchAvailable(query: SearchQuery): Promise<AvailableNumber[]>;
  /** The carrier's current listing of one number, or undefined when it is not offered. */
  quote(phoneNumber: string): Promise<AvailableNumber | undefined>;
  /** Buys the number; UnprocessableError when the carrier no longer offers it. */
  /**
   * Buys a number; `voiceUrl` is where the carrier asks what to do with calls to it (Twilio:
   * VoiceUrl), `statusCallbackUrl` where it reports their end (Twilio: StatusCallback; without it
   * Twilio reports nothing about an incoming call).
   */
  purchase(phoneNumber: string, options?: { voiceUrl?: string; statusCallbackUrl?: string }): Promise<PurchasedNumber>;
  /** Gives a bought number back; releasing one the carrier no longer holds is not an error. */
  release(number: PurchasedNumber): Promise<void>;
  /** Places an outbound call. */
  placeCall(input: PlaceCallInput): Promise<PlacedCall>;
  /**
   * A placed call's course again (carriers whose events the platform queues itself: the simulated
   * one), from the call it placed at `startMs`: the same events `placeCall` answered.
   */
  courseOf?(providerCallId: string, to: string, ringSeconds: number, startMs: number): CallStatusEvent[];
  /** Reads a status event the carrier posted to `statusCallbackUrl` (form fields). */
  parseStatusEvent(fields: Record<string, string>): CallStatusEvent;
  /**
   * Changes a call in progress (the voice runtime): new instructions (`twiml`, e.g. a transfer's
   * `<Dial>`), instructions to fetch (`url`) or a hang-up. Twilio: POST Calls/{Sid}.json with `Twiml`, `Url` or `Status=completed`.
   */
  updateCall?(providerCallId: string, change: LiveCallChange): Promise<void>;
  /**
   * The call as the carrier holds it now, undefined when it knows no such call (Twilio: GET
   * Calls/{Sid}.json: `status`, `duration`, `answered_by`). Sweeps ask it before they decide
   * about a call whose final status never came.
   */
  fetchCall?(providerCallId: string): Promise<CarrierCall | undefined>;
  /**
   * The carrier's price per minute (USD) of an outbound call to `to` by the destination's country
   * (Twilio: Pricing v2 Voice/Countries/{ISO}, the longest matching prefix); undefined when it has
   * none.
   */
  outboundPrice?(to: string): Promise<number | undefined>;
  /** Downloads a finished recording the carrier announced to `recordingCallbackUrl` (carriers that record). */
  fetchRecording?(recordingUrl: string): Promise<Buffer>;
}

/**
 * Whether a live update failed because the call is no longer there to change (Twilio 21220: not
 * in progress; 20404: no such call): the person hung up meanwhile.
 */
export const liveCallGone = (err: unknown): boolean => [21220, 20404].includes(Number((err as { details?: { provider_code?: unknown } }).details?.provider_code));
