/**
 * The external scheduling service behind one port. The built-in calendar needs no adapter (it
 * is the table itself, see shared/domain/appointments); Cal.com is the one external provider.
 */
export interface ExternalBooking {
  uid: string;
  /** ISO, UTC. */
  start: string;
  end: string;
  durationMinutes: number;
  meetingUrl: string;
  status: string;
}

export interface BookingRequest {
  /** ISO, UTC. */
  start: string;
  durationMinutes: number;
  attendee: { name: string; email: string; timeZone: string; phoneNumber?: string };
  /** String values only (Cal.com's rule). */
  metadata: Record<string, string>;
}

export interface SchedulingProvider {
  /** Checks the credentials and the event type; throws SchedulerRefused when refused. */
  verify(): Promise<{ account: string; eventTypeLength?: number }>;
  /** Starts (ISO with offset) bookable in [start, end) for a duration. */
  slots(query: { start: string; end: string; timeZone: string; durationMinutes: number }): Promise<string[]>;
  book(request: BookingRequest): Promise<ExternalBooking>;
  /** Moves a booking; the provider issues a new booking (new uid) for the new time. */
  reschedule(uid: string, change: { start: string; reason?: string }): Promise<ExternalBooking>;
  cancel(uid: string, reason?: string): Promise<void>;
}

/** The provider answered with a 4xx: the request was refused (bad key, slot taken…). */
export class SchedulerRefused extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
    this.name = 'SchedulerRefused';
  }
}

/** The provider could not be reached or failed (network, timeout, 5xx). */
export class SchedulerUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SchedulerUnavailable';
  }
}
