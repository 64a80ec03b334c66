import type { APIGatewayProxyResultV2 } from 'aws-lambda';

export type HttpResponse = APIGatewayProxyResultV2 & {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
};

export function jsonResponse(
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
