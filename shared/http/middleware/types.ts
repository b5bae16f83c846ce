import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { MiddlewareObj } from '@middy/core';
import type { HttpState } from '../context';

/** The house shape of every HTTP middleware. */
export type HttpMiddleware = MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context, { http?: HttpState }>;
