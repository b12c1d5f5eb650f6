export { idempotent } from "./cloud-event.js";
export type { DeadLetterOptions, ExhaustedReason, NackedOutcome } from "./dead-letter.js";
export type { RequestTimeoutOptions } from "./deadline.js";
export { gatewayDisabled } from "./disabled.js";
export type { CloudEventAttributes } from "./formats/cloud-event-attributes.js";
export { cloudEventKey, cloudEventSourceIdKey, defaultMessageKey } from "./formats/default-keys.js";
export { parseEnvelope } from "./formats/envelope.js";
export type { ParsedMessage, PushMessage } from "./formats/parsed-message.js";
export {
  type CloudEventLike,
  cloudEventMessageId,
  MESSAGE_PUBLISHED_TYPE,
  parseCloudEvent,
} from "./formats/pubsub-cloud-event.js";
export { type PubSubMessageLike, parsePubSubMessage } from "./formats/pull-message.js";
export { parsePushBody } from "./formats/push-envelope.js";
export { parsePushRequest } from "./formats/push-request.js";
export type { HttpHeadersLike, PushRequestHeaders } from "./formats/request-headers.js";
export { TRANSPORT_HEADERS } from "./formats/transport-headers.js";
export type { GatewayOptions, TransactionalGatewayOptions } from "./gateway.js";
export { idempotentHttp } from "./http.js";
export {
  DEFAULT_MAX_BODY_BYTES,
  type HttpGatewayOptions,
  type HttpRequestLike,
  type HttpResponseLike,
  type PushRequest,
  type Req,
  type Res,
} from "./http-types.js";
export { idempotentMessage, type PullGatewayOptions } from "./pull.js";
