#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploymentOf } from '../lib/names';
import { VoiceAgentPlatformStack } from '../lib/stack';

// aws-cdk-lib's built-in CloudFormation template validation adds ~2.3 s to every synth and
// cdk-nag below already checks the stack; CDK_VALIDATION=true turns it back on.
const app = new App({ builtinCloudFormationValidation: process.env.CDK_VALIDATION === 'true' });

// One stack per stage (`-c stage=prod` or STAGE; default dev). Account and region come from the
// CLI's profile at deploy time unless pinned (`-c account=… -c region=…`), so the template is
// the same for every account and region.
const deployment = deploymentOf((key) => app.node.tryGetContext(key), process.env);

new VoiceAgentPlatformStack(app, deployment.stackName, {
  description: `Voice AI Agent Platform API (stage ${deployment.stage})`,
  env: deployment.env,
  alarmEmail: process.env.ALARM_EMAIL || undefined,
  // The carrier: `simulated` (default) or `twilio`, with its credentials in Secrets Manager
  // (a secret the stack creates, or an existing one named by TWILIO_SECRET_NAME).
  telephony: {
    provider: process.env.TELEPHONY_PROVIDER === 'twilio' ? 'twilio' : 'simulated',
    twilioSecretName: process.env.TWILIO_SECRET_NAME || undefined,
  },
  // Calls: the public base URL the carrier's callbacks reach (a custom domain) and the voice runtime Twilio streams media to.
  publicBaseUrl: process.env.PUBLIC_BASE_URL || undefined,
  // SOURCE_MAPS=true: stack traces name source lines, at a cost to every cold start (docs/operations.md).
  sourceMaps: process.env.SOURCE_MAPS === 'true',
  voiceRuntimeUrl: process.env.VOICE_RUNTIME_URL || undefined,
  // Post-call analysis: `local` (default, no account) or `openai` (any OpenAI-compatible API), its
  // key in Secrets Manager (a secret the stack creates, or an existing one named by ANALYSIS_SECRET_NAME).
  analysis: {
    provider: process.env.ANALYSIS_PROVIDER === 'openai' ? 'openai' : 'local',
    baseUrl: process.env.ANALYSIS_BASE_URL || undefined,
    defaultModel: process.env.ANALYSIS_MODEL || undefined,
    secretName: process.env.ANALYSIS_SECRET_NAME || undefined,
  },
});

// cdk-nag 3: a policy validation plugin; any unacknowledged finding fails the synth. Each
// acknowledgment sits next to the resource it concerns, with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
