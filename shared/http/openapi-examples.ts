/**
 * Examples for the OpenAPI document, keyed by schema name (`named(...)` where the schema is
 * declared). Every schema an operation takes as its body or answers as its `data` needs one:
 * the generator refuses to build without it, a test parses each with its zod schema, and both
 * linters check each against the JSON Schema. An operation's examples follow from its schemas
 * (the request body's example; the success envelope around the response's example).
 * Kept apart from the schemas so no Lambda bundle carries them.
 */
const ids = {
  org: '01936f4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
  agent: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90',
  tool: '01936f4f-0c2d-7e3f-a041-5b6c7d8e9fa1',
  widget: '01936f4f-1d3e-7f40-b152-6c7d8e9fa0b2',
  contact: '01936f4f-2e4f-7051-8263-7d8e9fa0b1c3',
  note: '01936f4f-3f50-7162-9374-8e9fa0b1c2d4',
  appointment: '01936f4f-4061-7273-a485-9fa0b1c2d3e5',
  kb: '01936f4f-5172-7384-b596-a0b1c2d3e4f6',
  upload: '01936f4f-6283-7495-86a7-b1c2d3e4f507',
  phoneNumber: '01936f4f-7394-75a6-97b8-c2d3e4f50618',
  charge: '01936f4f-84a5-76b7-a8c9-d3e4f5061729',
  apiKey: '01936f4f-95b6-77c8-b9da-e4f50617283a',
  call: '01936f4f-a6c7-78d9-8aeb-f5061728394b',
  campaign: '01936f4f-b7d8-79ea-9bfc-06172839a4bc',
  campaignContact: '01936f4f-c8e9-7afb-ac0d-172839a4b5cd',
  contact2: '01936f4f-d9fa-7b0c-bd1e-2839a4b5c6de',
  webhook: '01936f4f-ea0b-7c1d-8e2f-39a4b5c6d7ef',
  delivery: '01936f4f-fb1c-7d2e-9f30-4a5b6c7d8e90',
  event: '01936f50-0c2d-7e3f-a041-5b6c7d8e9f01',
};
export const exampleIds = ids;

const created = '2026-03-02T15:04:05.123Z';
const updated = '2026-03-02T16:20:41.507Z';

// ---- Health and API keys
const newKey = { id: ids.apiKey, name: 'CI deploys', prefix: 'Xk3v9QbT', created_at: created, expires_at: '2027-01-01T00:00:00.000Z' };
const ApiKey = { ...newKey, last_used_at: updated };

// ---- Agents, tools, widgets
const Agent = {
  id: ids.agent,
  organization_id: ids.org,
  widget_settings_id: ids.widget,
  name: 'Front desk',
  agent_name: 'Ava',
  status: 'AGENT_STATUS_ACTIVE',
  model: 'gpt-4o-mini',
  s2s_model: '',
  voice_id: 'alloy',
  temperature: 0.7,
  reminder_trigger_ms: 10000,
  reminder_max_count: 1,
  ambient_sound: 'office',
  ambient_sound_volume: 0.3,
  voice_pipeline: 'realtime',
  language: 'en-US',
  end_call_after_silence: true,
  max_call_duration_ms: 1800000,
  ring_duration_ms: 30000,
  enable_voicemail_detection: true,
  voicemail_message: 'Hi, this is Ava from Acme Dental. Please call us back at +14155550123.',
  voicemail_detection_timeout_ms: 5000,
  ivr_options: null,
  post_call_analysis_model: 'gpt-4o-mini',
  analysis_summary_prompt: 'Summarize the call in two sentences and list any appointment booked.',
  selected_tools: [{ tool_id: ids.tool }],
  integrations: null,
  knowledge_base: ids.kb,
  begin_message: 'Hello, this is Ava from Acme Dental. How can I help you today?',
  prompt: 'You are {{agent_name}}, the front desk of Acme Dental. Answer briefly and book check-ups with book_appointment.',
  start_speaker: 'agent',
  analysis_fields: [
    { name: 'appointment_booked', type: 'boolean', description: 'Whether a check-up was booked on the call' },
    { name: 'outcome', type: 'enum', description: 'How the call ended for the practice', options: ['booked', 'callback', 'not_interested'] },
  ],
  success_criteria: 'The caller booked a check-up or asked to be called back.',
  handoff_agents: [{ agent_id: '01936f4e-9b3c-7d4e-8f5a-6b7c8d9e0f1a', description: 'Billing questions: invoices, refunds, payment plans' }],
  require_passing_tests: false,
  openai_system_messages: 'demote',
  published_version: 3,
  created_at: created,
  updated_at: updated,
};

const toolDefinition = {
  name: 'check_order_status',
  description: 'Looks up the status of an order by its number',
  parameters: {
    type: 'object',
    properties: { order_number: { type: 'string', description: 'The order number, such as A-1042' } },
    required: ['order_number'],
  },
};
const webhookTool = {
  name: 'Order status',
  description: 'Tells callers where their order is',
  type: 'webhook',
  definition: toolDefinition,
  isActive: true,
  url: 'https://api.example.com/orders/status',
  method: 'POST',
  headers: { Authorization: 'Bearer sk_live_51H8x2' },
  timeout_ms: 5000,
};
const Tool = { id: ids.tool, organizationId: ids.org, ...webhookTool, previous_secret_expires_at: null, createdAt: created, updatedAt: updated };

const widgetLook = {
  title: 'Chat with Acme Dental',
  greeting: 'Hi! How can I help you today?',
  placeholder: 'Type your message...',
  primary_color: '#2563eb',
  position: 'bottom-right',
  avatar_url: 'https://www.example.com/ava.png',
  language: 'en-US',
};
const WidgetSettings = {
  id: ids.widget,
  organization_id: ids.org,
  name: 'Website widget',
  is_active: true,
  ...widgetLook,
  allowed_origins: ['https://www.example.com'],
  public_variables: ['page'],
  daily_message_limit: 2000,
  voice_enabled: false,
  created_at: created,
  updated_at: updated,
};

// ---- Contacts
const contactFields = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada@example.com',
  phone: '+14155550123',
  company: 'Analytical Engines Ltd',
  metadata: { crm_id: 'A-1042' },
  timezone: 'America/Los_Angeles',
  opt_out: false,
  tags: ['vip'],
};
const Contact = { id: ids.contact, ...contactFields, created_at: created, updated_at: updated };
const Note = { id: ids.note, contact_id: ids.contact, content: 'Prefers morning calls.', created_at: created };

// ---- Appointments and scheduling
const Appointment = {
  id: ids.appointment,
  organization_id: ids.org,
  agent_id: ids.agent,
  contact_id: ids.contact,
  scheduler_booking_uid: '',
  provider: 'builtin',
  attendee_name: 'Ada Lovelace',
  attendee_email: 'ada@example.com',
  attendee_phone: '+14155550123',
  attendee_timezone: 'America/Los_Angeles',
  start_time: '2026-03-10T17:00:00.000Z',
  end_time: '2026-03-10T17:30:00.000Z',
  duration_minutes: 30,
  meeting_url: '',
  status: 'accepted',
  created_at: created,
  updated_at: created,
};

// ---- Knowledge base
const KnowledgeBase = {
  id: ids.kb,
  organization_id: ids.org,
  name: 'Clinic FAQ',
  description: 'Opening hours, prices and insurance',
  document_count: 12,
  created_at: created,
  updated_at: updated,
};
const DocumentSummary = {
  org_id: ids.org,
  kb_id: ids.kb,
  doc_id: 'url-3f1c9a7e5b2d4c8a9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d',
  metadata: { section: 'pricing' },
  status: 'indexed',
  title: 'Prices',
  source: { type: 'url', url: 'https://www.example.com/pricing' },
  chunk_count: 4,
  error: null,
  created_at: created,
  updated_at: updated,
  indexed_at: updated,
};

// ---- Phone numbers and billing
const listing = {
  phone_number: '+14155550123',
  country: 'US',
  locality: 'San Francisco',
  region: 'CA',
  price: 1.15,
  per_minute_price_inbound: 0.0085,
  per_minute_price_outbound: 0.014,
  capabilities: { voice: true, sms: true, mms: false },
};

// ---- Campaigns, do-not-call, webhooks and events
const CampaignSchedule = {
  window_start: '09:00',
  window_end: '17:00',
  window_days: [1, 2, 3, 4, 5],
  timezone: 'America/Los_Angeles',
  max_concurrent: 2,
  retry_attempts: 1,
  retry_gap_min: 60,
  blackout_dates: ['2026-05-25'],
  use_contact_timezone: true,
};
const CampaignContactStats = { total: 250, contacted: 120, successful: 84, failed: 9, no_answer: 27, pending: 128, in_progress: 2 };
const Campaign = {
  id: ids.campaign,
  organization_id: ids.org,
  name: 'March check-up reminders',
  agent_id: ids.agent,
  agent_version: 3,
  phone_number_id: ids.phoneNumber,
  from_phone_number: '+14155550123',
  status: 'running',
  execution_status: 'dispatching',
  schedule: CampaignSchedule,
  contact_stats: CampaignContactStats,
  pause_reason: null,
  started_at: updated,
  completed_at: null,
  created_at: created,
  updated_at: updated,
};
/** 1,000 one-minute calls at 0.014 USD and one number at 1.15: exact. */
const currencyTotal = { currency: 'USD', amount: 15.15, amount_decimal: '15.1500', amount_units: 151500, amount_scale: 4, charges: 1001 };
const webhookEndpoint = {
  id: ids.webhook,
  organization_id: ids.org,
  url: 'https://hooks.example.com/voice-platform',
  events: ['call.ended', 'appointment.booked'],
  description: 'CRM sync',
  enabled: true,
  previous_secret_expires_at: null,
  created_at: created,
  updated_at: updated,
};

const chatId = '01936f50-1d3e-7f40-b152-6c7d8e9fa0c3';
const chatMessages = [
  { id: '01936f50-2e4f-7051-8263-7d8e9fa0b1d4', role: 'agent', content: 'Hi Ada, I am Ava. How can I help?', tool_call_id: null, name: null, arguments: null, sources: [], agent_id: ids.agent, latency_ms: null, created_at: created },
  { id: '01936f50-3f50-7162-9374-8e9fa0b1c2e5', role: 'user', content: 'When do you open on Saturdays?', tool_call_id: null, name: null, arguments: null, sources: [], agent_id: null, latency_ms: null, created_at: updated },
  {
    id: '01936f50-4061-7273-a485-9fa0b1c2d3f6', role: 'agent', content: 'On Saturdays we open at 10 am.', tool_call_id: null, name: null, arguments: null,
    sources: [{ doc_id: 'opening-hours', url: 'https://www.example.com/hours', score: 3.2141 }], agent_id: ids.agent,
    latency_ms: { e2e: 912, model: 604, tools: 0, knowledge_base: 41, platform: 267 }, created_at: updated,
  },
];
const chatSummary = {
  id: chatId, organization_id: ids.org, agent_id: ids.agent, agent_version: 3, current_agent_id: ids.agent, current_agent_version: 3,
  segments: [{ agent_id: ids.agent, agent_version: 3, started_at: created, reason: null }], contact_id: ids.contact, channel: 'api', widget_id: null, status: 'active', end_reason: null,
  pending_tool_calls: [], dynamic_variables: { plan: 'gold' }, metadata: { ticket: 'T-1042' }, analysis: null, analysis_error: null,
  usage: { llm_requests: 1, prompt_tokens: 412, completion_tokens: 18 }, latency: null, user_messages: 1, started_at: created, ended_at: null, trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', created_at: created, updated_at: updated,
};
const chatTurn = { chat: { id: chatId, status: 'active', end_reason: null, pending_tool_calls: [] }, messages: chatMessages.slice(1) };

export const schemaExamples: Record<string, unknown> = {
  ...versionAndTestExamples(),
  StartChatRequest: { agent_id: ids.agent, contact_id: ids.contact, dynamic_variables: { plan: 'gold' }, metadata: { ticket: 'T-1042' } },
  Chat: { ...chatSummary, messages: chatMessages },
  ChatSummary: chatSummary,
  ChatMessageRequest: { content: 'When do you open on Saturdays?' },
  ChatCompletionRequest: { model: ids.agent, messages: [{ role: 'user', content: 'When do you open on Saturdays?' }], stream: false },
  ChatToolResultsRequest: { results: [{ tool_call_id: 'call_8Yk2', output: { total: 42.5, currency: 'EUR' } }] },
  ChatTurn: chatTurn,
  StartWidgetChatRequest: { dynamic_variables: { page: 'pricing' } },
  WidgetChat: { id: chatId, widget_id: ids.widget, agent_id: ids.agent, status: 'active', end_reason: null, pending_tool_calls: [], messages: chatMessages, started_at: created, ended_at: null },
  WidgetChatStarted: {
    id: chatId, widget_id: ids.widget, agent_id: ids.agent, status: 'active', end_reason: null, pending_tool_calls: [], messages: chatMessages.slice(0, 1), started_at: created, ended_at: null,
    token: 'eyJwIjoid2lkZ2V0LWNoYXQiLCJleHAiOjE3NzI1NTY2NDV9.Qm9vbXRva2VuU2lnbmF0dXJlRXhhbXBsZQ', token_expires_at: '2026-03-03T15:04:05.123Z',
  },
  Health: { status: 'ok', version: '0.1.0' },
  Readiness: { status: 'ready', checks: { table: 'ok', bucket: 'ok' } },

  CreateApiKeyRequest: { name: 'CI deploys', expires_at: '2027-01-01T00:00:00Z' },
  ApiKey,
  IssuedApiKey: { ...newKey, key: 'vap_Xk3v9QbT_2mQk7Yv0cR8uLzW1nE5tB4sH6jD3fA9gP0xK2iV7oM1' },

  CreateAgentRequest: {
    name: 'Front desk',
    agent_name: 'Ava',
    voice_id: 'alloy',
    begin_message: 'Hello, this is Ava from Acme Dental. How can I help you today?',
    selected_tools: [{ tool_id: ids.tool }],
    knowledge_base: ids.kb,
  },
  UpdateAgentRequest: { temperature: 0.5, max_call_duration_ms: 900000 },
  AgentStatusRequest: { status: 'AGENT_STATUS_INACTIVE' },
  Agent,

  CreateToolRequest: webhookTool,
  UpdateToolRequest: { isActive: false, timeout_ms: 8000 },
  Tool,
  ToolWithSecret: { ...Tool, secret: 'whsec_q3Jt7YbW0nVxK2cR9mLp4sF8hD1gA6uE5iO0zT7yXwM=' },

  CreateWidgetSettingsRequest: { name: 'Website widget', ...widgetLook, allowed_origins: ['https://www.example.com'], public_variables: ['page'] },
  UpdateWidgetSettingsRequest: { greeting: 'Welcome back! What can we do for you?' },
  WidgetSettings,
  WidgetConfig: {
    id: ids.widget,
    ...widgetLook,
    stream_base_url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/v1/api/v1',
    voice_enabled: false,
    agent: { id: ids.agent, agent_name: 'Ava', begin_message: 'Hello, this is Ava from Acme Dental. How can I help you today?', start_speaker: 'agent' },
  },

  CreateContactRequest: contactFields,
  UpdateContactRequest: { company: 'Babbage & Co', tags: ['vip', 'returning'] },
  Contact,
  NoteRequest: { content: 'Prefers morning calls.' },
  Note,
  Activity: { type: 'note', description: 'Prefers morning calls.', timestamp: created },
  ContactStats: { total_calls: 3, answered_calls: 2, total_call_duration_sec: 412, last_call_at: updated, appointments: 1, notes: 1 },
  ContactCall: {
    id: ids.call,
    contact_id: ids.contact,
    agent_id: ids.agent,
    campaign_id: null,
    direction: 'outbound',
    status: 'completed',
    answered: true,
    from_phone_number: '+14155550100',
    to_phone_number: '+14155550123',
    started_at: created,
    ended_at: '2026-03-02T15:07:19.000Z',
    duration_sec: 194,
  },

  BookAppointmentRequest: { agent_id: ids.agent, contact_id: ids.contact, start_time: '2026-03-10T09:00:00-08:00', duration_minutes: 30 },
  RescheduleAppointmentRequest: { start_time: '2026-03-11T09:30:00-08:00', reason: 'Caller asked for the next day' },
  CancelAppointmentRequest: { reason: 'Caller cancelled' },
  Appointment,
  Availability: {
    agent_id: ids.agent,
    timezone: 'America/Los_Angeles',
    duration_minutes: 30,
    start: '2026-03-10T08:00:00.000Z',
    end: '2026-03-11T08:00:00.000Z',
    provider: 'builtin',
    slots: [
      { start: '2026-03-10T09:00:00-08:00', end: '2026-03-10T09:30:00-08:00' },
      { start: '2026-03-10T09:15:00-08:00', end: '2026-03-10T09:45:00-08:00' },
    ],
  },
  WorkingHoursRequest: { days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00', timezone: 'America/Los_Angeles' },
  WorkingHours: { agent_id: ids.agent, configured: true, days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00', timezone: 'America/Los_Angeles', updated_at: updated },
  SchedulingIntegrationRequest: { provider: 'calcom', api_key: 'cal_live_8f2d1c0b9a7e6d5c4b3a2f1e', event_type_id: 1234567, webhook_secret: 'whsec_6fd2a1c9e0b34f7a' },
  SchedulingIntegration: {
    connected: true,
    provider: 'calcom',
    event_type_id: 1234567,
    base_url: 'https://api.cal.com',
    account: 'ada@example.com',
    has_webhook_secret: true,
    webhook_url: `https://api.example.com/api/v1/scheduler/webhooks/calcom/${ids.org}`,
    connected_at: created,
  },
  CalcomWebhookEvent: {
    triggerEvent: 'BOOKING_CANCELLED',
    createdAt: updated,
    payload: { uid: 'bk_4fQ2xZ8rT1', cancellationReason: 'Caller cancelled' },
  },
  CalcomWebhookResult: { trigger_event: 'BOOKING_CANCELLED', action: 'cancelled', appointment_id: ids.appointment },

  CreateKnowledgeBaseRequest: { name: 'Clinic FAQ', description: 'Opening hours, prices and insurance' },
  KnowledgeBase,
  DiscoverRequest: { url: 'https://www.example.com', max_depth: 2, limit: 50 },
  DiscoverResult: { urls: ['https://www.example.com/', 'https://www.example.com/pricing', 'https://www.example.com/team'], total: 3 },
  CreateUploadRequest: { content_type: 'application/pdf', size_bytes: 482133, filename: 'price-list.pdf' },
  Upload: {
    upload_id: ids.upload,
    upload_url: `https://vap-documents.s3.amazonaws.com/orgs/${ids.org}/uploads/${ids.upload}?X-Amz-Signature=3b1f`,
    method: 'PUT',
    headers: { 'content-type': 'application/pdf', 'content-length': '482133' },
    content_type: 'application/pdf',
    size_bytes: 482133,
    expires_at: '2026-03-02T15:19:05.123Z',
  },
  IngestRequest: { kb_id: ids.kb, url: 'https://www.example.com/pricing', title: 'Prices', metadata: { section: 'pricing' } },
  IngestResult: { kb_id: ids.kb, documents: [{ ...DocumentSummary, status: 'pending', chunk_count: 0, indexed_at: null }] },
  QueryRequest: { kb_id: ids.kb, query: 'How much is a cleaning?', top_k: 3 },
  QueryResult: {
    kb_id: ids.kb,
    query: 'How much is a cleaning?',
    passages: [{ doc_id: DocumentSummary.doc_id, text: 'A cleaning costs $95 and takes 45 minutes.', score: 7.42, metadata: { section: 'pricing' }, chunk_index: 1 }],
  },
  DocumentSummary,
  Document: { ...DocumentSummary, text: 'Prices\n\nA cleaning costs $95 and takes 45 minutes. An exam costs $60.' },

  AvailableNumber: listing,
  BuyPhoneNumberRequest: { phone_number: '+14155550123', price: 1.15 },
  ImportPhoneNumberRequest: {
    phone: '+14155550199',
    type: 'sip',
    name: 'Main line',
    termination_uri: 'sip:pbx.example.com:5060',
    sip_username: 'acme-trunk',
    sip_password: 'n0t-a-real-secret',
  },
  UpdateImportedPhoneNumberRequest: { termination_uri: 'sips:pbx2.example.com:5061' },
  UpdatePhoneNumberRequest: { name: 'Front desk line', inbound_agent_id: ids.agent, inbound_webhook_url: 'https://crm.example.com/voice/route', inbound_webhook_timeout_ms: 3000 },
  PhoneNumber: {
    id: ids.phoneNumber,
    organization_id: ids.org,
    source: 'purchased',
    ...listing,
    name: '+14155550123',
    status: 'active',
    inbound_agent_id: ids.agent,
    inbound_webhook_url: 'https://crm.example.com/voice/route',
    inbound_webhook_timeout_ms: 3000,
    purchased_at: created,
    next_renewal_at: '2026-04-02T15:04:05.123Z',
    created_at: created,
    updated_at: updated,
    released_at: null,
  },
  Charge: {
    id: ids.charge,
    organization_id: ids.org,
    amount: 1.15,
    amount_units: 11500,
    amount_scale: 4,
    currency: 'USD',
    reason: 'number_purchase',
    description: 'Phone number +14155550123, first month',
    resource_type: 'phone_number',
    resource_id: ids.phoneNumber,
    phone_number: '+14155550123',
    period_start: created,
    period_end: '2026-04-02T15:04:05.123Z',
    created_at: created,
  },
  CurrencyTotal: currencyTotal,
  ChargesTotal: { totals: [currencyTotal], from: '2026-03-01T00:00:00.000Z', to: '2026-04-01T00:00:00.000Z' },

  AddDncEntryRequest: { phone: '(415) 555-0187', country: 'US', reason: 'Asked not to be called again', source: 'call' },
  DncEntry: { phone: '+14155550187', reason: 'Asked not to be called again', source: 'call', created_at: created },

  CreateCampaignRequest: {
    name: 'March check-up reminders',
    agent_id: ids.agent,
    phone_number_id: ids.phoneNumber,
    from_phone_number: '+14155550123',
    contact_ids: [ids.contact, ids.contact2],
    schedule: { window_start: '09:00', window_end: '17:00', timezone: 'America/Los_Angeles', max_concurrent: 2, retry_attempts: 1 },
  },
  UpdateCampaignRequest: { name: 'March check-up reminders (West)', schedule: { window_end: '18:00', blackout_dates: ['2026-05-25'] } },
  AddCampaignContactsRequest: { contact_ids: [ids.contact, ids.contact2] },
  PreviewCampaignRequest: { assumed_call_sec: 150 },
  CampaignSchedule,
  CampaignContactStats,
  Campaign,
  CampaignSummary: {
    id: ids.campaign,
    name: Campaign.name,
    status: Campaign.status,
    execution_status: Campaign.execution_status,
    contact_stats: CampaignContactStats,
    created_at: created,
  },
  CampaignContact: {
    id: ids.campaignContact,
    contact_id: ids.contact,
    name: 'Ada Lovelace',
    phone: '+14155550123',
    email: 'ada@example.com',
    status: 'successful',
    attempt_count: 1,
    last_attempted_at: updated,
    next_retry_at: null,
    call_duration_sec: 194,
    error_message: '',
    call_session_id: ids.call,
    tags: ['vip'],
  },
  CampaignPreview: {
    campaign_id: ids.campaign,
    would_dial: 1,
    would_dial_contacts: [{ contact_id: ids.contact, phone: '+14155550123', next_opening_at: '2026-03-03T17:00:00.000Z', timezone: 'America/Los_Angeles', timezone_source: 'phone_number' }],
    skipped: [{ contact_id: ids.contact2, phone: '+14155550187', reason: 'do_not_call', error_message: 'on do-not-call list' }],
    skipped_counts: { do_not_call: 1 },
    window_next_opens_at: '2026-03-03T17:00:00.000Z',
    assumed_call_sec: 150,
    estimated_dialing_sec: 150,
    estimated_finish_at: '2026-03-03T17:02:30.000Z',
    truncated: false,
  },

  CreateWebhookRequest: { url: 'https://hooks.example.com/voice-platform', events: ['call.ended', 'appointment.booked'], description: 'CRM sync' },
  UpdateWebhookRequest: { events: ['*'], enabled: true },
  WebhookEndpoint: webhookEndpoint,
  WebhookEndpointWithSecret: { ...webhookEndpoint, secret: 'whsec_MfKQ9r8GKYqXTjZ1pN4hW2sL7bE3vC6dA0uY5oI8xRk=' },
  WebhookDelivery: {
    id: ids.delivery,
    webhook_id: ids.webhook,
    event_id: ids.event,
    event_type: 'appointment.booked',
    attempt: 1,
    status_code: 200,
    latency_ms: 184,
    error: null,
    succeeded: true,
    trigger: 'automatic',
    trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    created_at: updated,
  },
  Event: { id: ids.event, type: 'appointment.booked', created_at: created, organization_id: ids.org, data: Appointment },

  CreateCallRequest: {
    agent_id: ids.agent,
    from_phone_number: '+14155550123',
    to_phone_number: '+14155550100',
    contact_id: ids.contact,
    metadata: { crm_id: 'A-1042' },
    dynamic_variables: { first_name: 'Dana' },
  },
  Call: {
    id: ids.call,
    organization_id: ids.org,
    agent_id: ids.agent,
    agent_version: 3,
    campaign_id: null,
    contact_id: ids.contact,
    direction: 'outbound',
    channel: 'phone',
    from_phone_number: '+14155550123',
    to_phone_number: '+14155550100',
    status: 'ended',
    disconnection_reason: 'completed',
    error_message: null,
    started_at: created,
    answered_at: '2026-03-02T15:04:06.200Z',
    ended_at: '2026-03-02T15:05:12.900Z',
    duration_sec: 67,
    transcript: [
      { role: 'agent', text: 'Hi Dana, this is Ava from Acme.', time_sec: 0, agent_id: ids.agent },
      { role: 'user', text: 'Hi, yes, I was expecting your call.', time_sec: 3.2 },
      { role: 'agent', text: 'Great. Does Tuesday at ten still suit you?', time_sec: 4.1, agent_id: ids.agent, latency_ms: { e2e: 684, model: 412, tools: 0, knowledge_base: 0, platform: 272 } },
    ],
    latency: {
      e2e: { p50: 684, p90: 684, p99: 684, min: 684, max: 684, num: 1 }, model: { p50: 412, p90: 412, p99: 412, min: 412, max: 412, num: 1 },
      tools: { p50: 0, p90: 0, p99: 0, min: 0, max: 0, num: 1 }, knowledge_base: { p50: 0, p90: 0, p99: 0, min: 0, max: 0, num: 1 },
      platform: { p50: 272, p90: 272, p99: 272, min: 272, max: 272, num: 1 },
    },
    tool_calls: [{ name: 'check_availability', arguments: { start_date: '2026-03-10' }, result: { timezone: 'UTC', slots: [] }, time_sec: 21.4 }],
    transfers: [],
    segments: [{ agent_id: ids.agent, agent_version: null, started_at: '2026-03-02T15:04:06.200Z', reason: null }],
    recording_url: 'https://vap-recordings.s3.amazonaws.com/orgs/01936f4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f/recordings/01936f4f-a6c7-78d9-8aeb-f5061728394b.wav?X-Amz-Expires=900',
    analysis: {
      summary: 'Dana confirmed her appointment.', sentiment: 'positive', successful: true,
      success_rationale: 'Dana confirmed the booked check-up, which the success criteria count as a success.', custom: {},
      data: { appointment_booked: true, outcome: 'booked' }, data_types: { appointment_booked: 'boolean', outcome: 'enum' }, data_errors: [],
    },
    analysis_error: null,
    metadata: { crm_id: 'A-1042' },
    dynamic_variables: { first_name: 'Dana' },
    trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    created_at: created,
    updated_at: updated,
  },
  ConversationAnalytics: (() => {
    const week = {
      calls: 412, chats: 96, ended: { completed: 371, no_answer: 29, voicemail: 12, user_ended: 70, inactivity: 26 }, successful: 301, analyzed: 508,
      minutes: 1093.45, prompt_tokens: 184220, completion_tokens: 40310, openai_requests: 0, cost: 65.61,
      fields: { appointment_booked: { true: 244, false: 198 }, outcome: { booked: 244, callback: 61, not_interested: 137 } },
      versions: {
        2: { conversations: 350, analyzed: 350, successful: 210, latency: { e2e: { p50: 761, p90: 1280, p99: 2153 }, model: { p50: 453, p90: 905, p99: 1522 } } },
        3: { conversations: 158, analyzed: 158, successful: 91, latency: { e2e: { p50: 640, p90: 1076, p99: 1810 }, model: { p50: 381, p90: 761, p99: 1280 } } },
      },
      latency: { e2e: { p50: 719, p90: 1280, p99: 2153 }, model: { p50: 428, p90: 905, p99: 1522 } },
    };
    return { agent_id: ids.agent, channel: null, from: '2026-11-02', to: '2026-11-08', interval: 'week', intervals: [{ start: '2026-11-02', end: '2026-11-08', ...week }], totals: week };
  })(),
  CreateWebCallRequest: { agent_id: ids.agent, contact_id: ids.contact, dynamic_variables: { first_name: 'Dana' } },
  WebCallStarted: {
    call: {
      id: ids.call, organization_id: ids.org, agent_id: ids.agent, agent_version: null, campaign_id: null, contact_id: ids.contact,
      direction: 'inbound', channel: 'web', from_phone_number: null, to_phone_number: null, status: 'ringing', disconnection_reason: null,
      error_message: null, started_at: null, answered_at: null, ended_at: null, duration_sec: 0, transcript: [], latency: null, tool_calls: [], transfers: [],
      segments: [{ agent_id: ids.agent, agent_version: null, started_at: created, reason: null }], recording_url: null, analysis: null, analysis_error: null, metadata: {}, dynamic_variables: { first_name: 'Dana' }, trace_id: null, created_at: created, updated_at: created,
    },
    url: 'wss://voice.example.com/web',
    token: 'eyJvcmdhbml6YXRpb25faWQiOiIuLi4iLCJjYWxsX2lkIjoiLi4uIiwicCI6IndlYi1jYWxsIiwiZXhwIjoxNzcyNDYzOTA1fQ.c2lnbmF0dXJl',
    token_expires_at: '2026-03-02T15:05:05.000Z',
  },
  WidgetCallStarted: {
    call_id: ids.call,
    agent_id: ids.agent,
    url: 'wss://voice.example.com/web',
    token: 'eyJvcmdhbml6YXRpb25faWQiOiIuLi4iLCJjYWxsX2lkIjoiLi4uIiwicCI6IndlYi1jYWxsIiwiZXhwIjoxNzcyNDYzOTA1fQ.c2lnbmF0dXJl',
    token_expires_at: '2026-03-02T15:05:05.000Z',
  },
  TwilioCallbackForm: { CallSid: 'CA0123456789abcdef0123456789abcdef', CallStatus: 'completed', CallDuration: '67' },
  TwilioCallbackReceipt: { received: true },
  TwilioRelayActionForm: { CallSid: 'CA0123456789abcdef0123456789abcdef', CallStatus: 'in-progress', SessionStatus: 'ended', HandoffData: '{"reasonCode":"transfer","to":"+14155550123"}' },
  TwilioTransferForm: { CallSid: 'CA0123456789abcdef0123456789abcdef', CallStatus: 'in-progress', AnsweredBy: 'human', Digits: '1' },
  TwilioTransferReceipt: { received: true },
};

/** Agent versions and tests (docs/api.md, "Versions and tests"). */
function versionAndTestExamples(): Record<string, unknown> {
  const testId = '01936f50-1d3e-7f40-b152-6c7d8e9fa012';
  const runId = '01936f50-2e4f-7051-8263-7d8e9fa0b123';
  const test = {
    id: testId,
    agent_id: ids.agent,
    name: 'Books a check-up',
    user: { turns: ['Hi, I need a check-up', 'check_availability start_date=2026-03-10', 'book_appointment start_time=2026-03-10T09:00 name="Ann Lee"', 'bye'] },
    dynamic_variables: { clinic: 'Downtown' },
    contact: { first_name: 'Ann', last_name: 'Lee', timezone: 'America/New_York' },
    tool_mocks: [{ tool: 'book_appointment', output: { booked: true, appointment_id: 'test-1' } }],
    criteria: [
      { type: 'tool_called', tool: 'book_appointment', arguments: { name: 'Ann Lee' }, times: 1 },
      { type: 'reply_not_contains', text: 'failed', turn: 'any' },
      { type: 'ended', end_reason: 'agent_ended' },
      { type: 'judge', rubric: 'The agent confirms the booked time before saying goodbye.' },
    ],
    unmocked: 'refuse',
    created_at: created,
    updated_at: updated,
  };
  const result = {
    test_id: testId,
    test_name: test.name,
    attempt: 1,
    status: 'passed',
    transcript: [
      { role: 'agent', content: 'Hello, this is Ava from Acme Dental. How can I help you today?' },
      { role: 'user', content: 'Hi, I need a check-up' },
      { role: 'agent', content: 'Of course. Which day suits you?' },
    ],
    tool_calls: [{ name: 'book_appointment', arguments: { start_time: '2026-03-10T09:00', name: 'Ann Lee' }, result: { booked: true, appointment_id: 'test-1' }, answered_by: 'mock' }],
    end_reason: 'agent_ended',
    criteria: [
      { type: 'tool_called', tool: 'book_appointment', arguments: { name: 'Ann Lee' }, times: 1, verdict: 'passed', detail: 'book_appointment with {"name":"Ann Lee"} called 1 times' },
      { type: 'judge', rubric: 'The agent confirms the booked time before saying goodbye.', verdict: 'not_evaluated', detail: 'judge criteria are not_evaluated: the local model cannot judge a transcript (set LLM_PROVIDER=openai and LLM_BASE_URL)' },
    ],
    usage: { llm_requests: 6, prompt_tokens: 0, completion_tokens: 0 },
    error: null,
    not_evaluated: [{ criterion: 1, type: 'judge', reason: 'local_model', detail: 'judge criteria are not_evaluated: the local model cannot judge a transcript (set LLM_PROVIDER=openai and LLM_BASE_URL)' }],
    unused_mocks: [],
    truncated: false,
    duration_ms: 41,
    completed_at: updated,
  };
  return {
    PublishAgentVersionRequest: { description: 'Shorter greeting', test_run_id: runId, allow_not_evaluated: true, expected_published_version: 2 },
    AgentVersion: {
      agent_id: ids.agent,
      version: 3,
      description: 'Shorter greeting',
      created_at: created,
      config: { agent_name: 'Ava', prompt: Agent.prompt, begin_message: Agent.begin_message, model: 'gpt-4o-mini', temperature: 0.7, selected_tools: [{ tool_id: ids.tool }], knowledge_base: ids.kb },
      test_run_id: runId,
    },
    CreateAgentTestRequest: { name: test.name, user: test.user, dynamic_variables: test.dynamic_variables, contact: test.contact, tool_mocks: test.tool_mocks, criteria: test.criteria },
    UpdateAgentTestRequest: { user: { persona: 'A busy parent who wants the earliest Saturday slot', goal: 'Book a check-up on a Saturday morning', max_turns: 8 } },
    AgentTest: test,
    StartTestRunRequest: { test_ids: [testId], agent_version: 'draft', repeat: 2 },
    TestRun: {
      id: runId,
      agent_id: ids.agent,
      agent_version: null,
      status: 'completed',
      test_ids: [testId],
      repeat: 1,
      results: [result],
      results_next_cursor: null,
      summary: { total: 1, passed: 1, failed: 0, errored: 0, not_evaluated: 1 },
      expires_at: '2026-03-02T17:04:05.123Z',
      notices: [result.criteria[1]!.detail],
      created_at: created,
      started_at: created,
      completed_at: updated,
    },
  };
}
