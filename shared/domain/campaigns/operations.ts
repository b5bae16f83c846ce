import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { ZONES_FILE, ZONES_SOURCE } from './contact-zone';
import {
  AddContactsBody,
  Campaign,
  CampaignContact,
  CampaignContactListQuery,
  CampaignListQuery,
  CampaignPreview,
  CampaignSummary,
  CreateCampaignBody,
  PreviewBody,
  UpdateCampaignBody,
} from './schemas';

const tag = 'Campaigns';
// Starting a campaign queues its first dispatch; cancelling a large one queues the rest of its cleanup.
// The number-to-zone data read by campaign contacts without a zone (./contact-zone.ts), copied beside the code.
const zoneData = [{ from: ZONES_SOURCE, to: ZONES_FILE }];
const dispatching = { table: 'RW' as const, queues: ['campaign-dispatch', 'event-fanout'] };

export const createCampaign = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns', operationId: 'createCampaign', tag, auth: true,
  summary: 'Create a draft campaign: agent, number (from_phone_number must be its number), 1–10,000 contact_ids (duplicates ignored), schedule',
  entry: 'functions/campaigns/create.ts', body: CreateCampaignBody,
  successMessage: 'Campaign created successfully', access: { table: 'RW' }, timeoutSeconds: 29, memoryMb: 1024, bundleFiles: zoneData,
});

export const listCampaigns = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/campaigns', operationId: 'listCampaigns', tag, auth: true,
  summary: 'List campaigns (short form), optionally of one status',
  entry: 'functions/campaigns/list.ts', query: CampaignListQuery, list: true, access: { table: 'R' },
});

export const getCampaign = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/campaigns/{id}', operationId: 'getCampaign', tag, auth: true,
  summary: 'Get one campaign', entry: 'functions/campaigns/get.ts', params: IdParams, access: { table: 'R' },
});

export const updateCampaign = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/campaigns/{id}', operationId: 'updateCampaign', tag, auth: true,
  summary: 'Change a campaign that is not completed; schedule members merge over the stored ones (a running campaign applies them at its next dispatch)',
  entry: 'functions/campaigns/update.ts', params: IdParams, body: UpdateCampaignBody,
  successMessage: 'Campaign updated successfully', access: { table: 'RW' },
  errors: { 409: 'The campaign is completed' },
});

export const deleteCampaign = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/campaigns/{id}', operationId: 'deleteCampaign', tag, auth: true,
  summary: 'Delete a campaign that is not running (409 otherwise) and its campaign contacts',
  entry: 'functions/campaigns/delete.ts', params: IdParams,
  successMessage: 'Campaign deleted successfully', access: { table: 'RW', queues: ['campaign-cleanup'] },
  errors: { 409: 'The campaign is running; pause or cancel it first' },
});

export const startCampaign = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns/{id}/start', operationId: 'startCampaign', tag, auth: true,
  summary: 'draft or paused → running (the number is held while the campaign runs or is paused)',
  entry: 'functions/campaigns/start.ts', params: IdParams,
  successMessage: 'Campaign started successfully', access: dispatching,
  errors: { 409: 'The campaign is not draft or paused, contacts are being added to it, or its phone number is no longer active' },
});

export const pauseCampaign = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns/{id}/pause', operationId: 'pauseCampaign', tag, auth: true,
  summary: 'running → paused: calls in flight finish, no new ones start',
  entry: 'functions/campaigns/pause.ts', params: IdParams,
  successMessage: 'Campaign paused successfully', access: { table: 'RW' },
  errors: { 409: 'The campaign is not running, or contacts are being added to it' },
});

export const cancelCampaign = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns/{id}/cancel', operationId: 'cancelCampaign', tag, auth: true,
  summary: 'draft, running or paused → completed (cancelled); pending contacts fail with "campaign cancelled"; calls in flight finish',
  entry: 'functions/campaigns/cancel.ts', params: IdParams,
  successMessage: 'Campaign cancelled successfully', access: { table: 'RW', queues: ['campaign-cleanup', 'event-fanout'] },
  errors: { 409: 'The campaign is completed already, or contacts are being added to it' },
});

export const listCampaignContacts = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/campaigns/{id}/contacts', operationId: 'listCampaignContacts', tag, auth: true,
  summary: 'A campaign\'s contacts, optionally of one status',
  entry: 'functions/campaigns/list-contacts.ts', params: IdParams, query: CampaignContactListQuery, list: true, access: { table: 'R' },
});

export const addCampaignContacts = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns/{id}/contacts', operationId: 'addCampaignContacts', tag, auth: true,
  summary: 'Add 1–10,000 contacts to a draft or paused campaign (duplicates and contacts already in it ignored); answers the campaign',
  entry: 'functions/campaigns/add-contacts.ts', params: IdParams, body: AddContactsBody,
  successMessage: 'Contacts added successfully', access: { table: 'RW' }, timeoutSeconds: 29, memoryMb: 1024, bundleFiles: zoneData,
  errors: { 409: 'The campaign is not draft or paused, or another request is adding contacts to it' },
});

export const previewCampaign = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/campaigns/{id}/preview', operationId: 'previewCampaign', tag, auth: true,
  summary: 'Dry run: who would be dialed, who would be skipped and why, when the window opens, and an estimated finish at max_concurrent',
  entry: 'functions/campaigns/preview.ts', params: IdParams, body: PreviewBody, bodyOptional: true,
  successMessage: 'Campaign preview', access: { table: 'R' }, timeoutSeconds: 29, memoryMb: 1024,
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createCampaign.response = Campaign;
  listCampaigns.response = CampaignSummary;
  getCampaign.response = Campaign;
  updateCampaign.response = Campaign;
  startCampaign.response = Campaign;
  pauseCampaign.response = Campaign;
  cancelCampaign.response = Campaign;
  listCampaignContacts.response = CampaignContact;
  addCampaignContacts.response = Campaign;
  previewCampaign.response = CampaignPreview;
}
