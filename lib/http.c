/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/http.h"

const char *cb_http_reason_phrase(long code)
{
        switch (code) {
        case 101:
                return "Switching Protocols";
        case 200:
                return "OK";
        case 400:
                return "Bad Request";
        case 401:
                return "Unauthorized";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 409:
                return "Conflict";
        case 410:
                return "Gone";
        case 415:
                return "Unsupported Media Type";
        case 431:
                return "Request Header Fields Too Large";
        case 422:
                return "Unprocessable Entity";
        case 429:
                return "Too Many Requests";
        case 500:
                return "Internal Server Error";
        case 502:
                return "Bad Gateway";
        case 503:
                return "Service Unavailable";
        case 504:
                return "Gateway Timeout";
        default:
                return "";
        }
}
