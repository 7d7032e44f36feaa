/* The management interface's SOAP 1.1 side: the WSDL, the request parser (expat), the three operations
 * (getPosition, setEnabled, getStatus) and the endpoint's summary. Any request it cannot honour gets a SOAP
 * fault. The connections that carry the requests are svc_server.c's. */
#include "svc_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if BK_HAVE_EXPAT
#include <expat.h>
#endif

static const char *const op_names[3] = {"getPosition", "setEnabled", "getStatus"};

/* Document/literal wrapped, so a generated client (zeep, gSOAP) maps each operation to one call. */
static const char wsdl_fmt[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<definitions name=\"VdmManagement\" targetNamespace=\"" SVC_MGMT_NS "\"\n"
    "  xmlns=\"http://schemas.xmlsoap.org/wsdl/\" xmlns:soap=\"http://schemas.xmlsoap.org/wsdl/soap/\"\n"
    "  xmlns:tns=\"" SVC_MGMT_NS "\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">\n"
    "  <types>\n"
    "    <xsd:schema targetNamespace=\"" SVC_MGMT_NS "\" elementFormDefault=\"qualified\">\n"
    "      <xsd:element name=\"getPosition\"><xsd:complexType><xsd:sequence/></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getPositionResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"latitudeDeg\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"longitudeDeg\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"altitudeM\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"fix\" type=\"xsd:int\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"setEnabled\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"setEnabledResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getStatus\"><xsd:complexType><xsd:sequence/></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getStatusResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "        <xsd:element name=\"uptimeS\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"messagesSent\" type=\"xsd:unsignedLong\"/>\n"
    "        <xsd:element name=\"requestsServed\" type=\"xsd:unsignedLong\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "    </xsd:schema>\n"
    "  </types>\n"
    "  <message name=\"getPositionIn\"><part name=\"parameters\" element=\"tns:getPosition\"/></message>\n"
    "  <message name=\"getPositionOut\"><part name=\"parameters\" element=\"tns:getPositionResponse\"/></message>\n"
    "  <message name=\"setEnabledIn\"><part name=\"parameters\" element=\"tns:setEnabled\"/></message>\n"
    "  <message name=\"setEnabledOut\"><part name=\"parameters\" element=\"tns:setEnabledResponse\"/></message>\n"
    "  <message name=\"getStatusIn\"><part name=\"parameters\" element=\"tns:getStatus\"/></message>\n"
    "  <message name=\"getStatusOut\"><part name=\"parameters\" element=\"tns:getStatusResponse\"/></message>\n"
    "  <portType name=\"VdmManagementPortType\">\n"
    "    <operation name=\"getPosition\"><input message=\"tns:getPositionIn\"/><output message=\"tns:getPositionOut\"/></operation>\n"
    "    <operation name=\"setEnabled\"><input message=\"tns:setEnabledIn\"/><output message=\"tns:setEnabledOut\"/></operation>\n"
    "    <operation name=\"getStatus\"><input message=\"tns:getStatusIn\"/><output message=\"tns:getStatusOut\"/></operation>\n"
    "  </portType>\n"
    "  <binding name=\"VdmManagementBinding\" type=\"tns:VdmManagementPortType\">\n"
    "    <soap:binding style=\"document\" transport=\"http://schemas.xmlsoap.org/soap/http\"/>\n"
    "    <operation name=\"getPosition\"><soap:operation soapAction=\"" SVC_MGMT_NS "#getPosition\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "    <operation name=\"setEnabled\"><soap:operation soapAction=\"" SVC_MGMT_NS "#setEnabled\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "    <operation name=\"getStatus\"><soap:operation soapAction=\"" SVC_MGMT_NS "#getStatus\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "  </binding>\n"
    "  <service name=\"VdmManagement\">\n"
    "    <port name=\"VdmManagementPort\" binding=\"tns:VdmManagementBinding\">\n"
    "      <soap:address location=\"http://%s:%d/vdm\"/>\n"
    "    </port>\n"
    "  </service>\n"
    "</definitions>\n";

/* ---- SOAP request parsing ---- */

typedef struct {
    int depth, op, bad, have_enabled, in_enabled;
    char why[160];
    char text[16];
    size_t text_n;
    int enabled;
} soap_req;

#if BK_HAVE_EXPAT
static int name_is(const char *name, const char *ns, const char *local)
{
    size_t n = strlen(ns);
    return strncmp(name, ns, n) == 0 && name[n] == '|' && strcmp(name + n + 1, local) == 0;
}

static void XMLCALL s_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    soap_req *r = ud;
    r->depth++;
    if (r->bad)
        return;
    if (r->depth == 1 && !name_is(name, SOAP_ENV, "Envelope")) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "the document is not a SOAP 1.1 Envelope");
    } else if (r->depth == 3 && r->op < 0) {
        for (int i = 0; i < 3; i++)
            if (name_is(name, SVC_MGMT_NS, op_names[i]))
                r->op = i;
        if (r->op < 0 && !r->why[0])
            snprintf(r->why, sizeof r->why, "unknown operation (expected getPosition, setEnabled or getStatus in %s)",
                     SVC_MGMT_NS);
    } else if (r->depth == 4 && r->op == 1 && name_is(name, SVC_MGMT_NS, "enabled")) {
        r->in_enabled = 1;
        r->text_n = 0;
    }
}

static void XMLCALL s_end(void *ud, const XML_Char *name)
{
    (void)name;
    soap_req *r = ud;
    if (r->in_enabled && r->depth == 4) {
        r->text[r->text_n] = 0;
        r->in_enabled = 0;
        if (!strcmp(r->text, "true") || !strcmp(r->text, "1"))
            r->enabled = 1, r->have_enabled = 1;
        else if (!strcmp(r->text, "false") || !strcmp(r->text, "0"))
            r->enabled = 0, r->have_enabled = 1;
    }
    r->depth--;
}

static void XMLCALL s_text(void *ud, const XML_Char *t, int len)
{
    soap_req *r = ud;
    if (!r->in_enabled)
        return;
    for (int i = 0; i < len; i++)
        if (t[i] != ' ' && t[i] != '\n' && t[i] != '\t' && t[i] != '\r' && r->text_n < sizeof r->text - 1)
            r->text[r->text_n++] = t[i];
}

static XML_Parser g_doctype_parser;
static void XMLCALL s_doctype(void *ud, const XML_Char *n, const XML_Char *s, const XML_Char *p, int i)
{
    (void)n, (void)s, (void)p, (void)i;
    soap_req *r = ud;
    r->bad = 1;
    snprintf(r->why, sizeof r->why, "a DOCTYPE is not allowed in a SOAP message");
    XML_StopParser(g_doctype_parser, XML_FALSE);
}

static void parse_soap(const char *body, size_t n, soap_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = -1;
    XML_Parser p = XML_ParserCreateNS("UTF-8", '|');
    if (!p) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "out of memory");
        return;
    }
    g_doctype_parser = p;
    XML_SetUserData(p, r);
    XML_SetElementHandler(p, s_start, s_end);
    XML_SetCharacterDataHandler(p, s_text);
    XML_SetStartDoctypeDeclHandler(p, s_doctype);
    if (XML_Parse(p, body, (int)n, 1) != XML_STATUS_OK && !r->bad) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "malformed XML: %s at line %lu column %lu",
                 XML_ErrorString(XML_GetErrorCode(p)), (unsigned long)XML_GetCurrentLineNumber(p),
                 (unsigned long)XML_GetCurrentColumnNumber(p));
    }
    XML_ParserFree(p);
    if (!r->bad && r->op < 0) {
        r->bad = 1;
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "the SOAP Body names no operation");
    }
    if (!r->bad && r->op == 1 && !r->have_enabled) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "setEnabled needs <enabled>true|false</enabled>");
    }
}
#endif

static void soap_call(svc_mgmt *m, svc_shared *sh, mconn *c, const char *body, size_t n, int close_after)
{
#if BK_HAVE_EXPAT
    soap_req r;
    parse_soap(body, n, &r);
    if (r.bad) {
        m->malformed++;
        svc_soap_fault(m, c, 500, "Client", r.why, close_after);
        return;
    }
    char out[1024];
    int len;
    const char *head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                       "\"><soap:Body>";
    const char *tail = "</soap:Body></soap:Envelope>\n";
    m->ops[r.op]++;
    if (r.op == 0) {
        svc_fix f;
        pthread_mutex_lock(&sh->mu);
        f = sh->fix;
        pthread_mutex_unlock(&sh->mu);
        len = snprintf(out, sizeof out,
                       "%s<m:getPositionResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:latitudeDeg>%.7f</m:latitudeDeg>"
                       "<m:longitudeDeg>%.7f</m:longitudeDeg><m:altitudeM>%.2f</m:altitudeM><m:fix>%d</m:fix>"
                       "</m:getPositionResponse>%s",
                       head, f.lat_deg, f.lon_deg, f.alt_m, f.fix, tail);
    } else if (r.op == 1) {
        sh->enabled = r.enabled;
        len = snprintf(out, sizeof out,
                       "%s<m:setEnabledResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:enabled>%s</m:enabled>"
                       "</m:setEnabledResponse>%s",
                       head, sh->enabled ? "true" : "false", tail);
    } else
        len = snprintf(out, sizeof out,
                       "%s<m:getStatusResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:enabled>%s</m:enabled>"
                       "<m:uptimeS>%.3f</m:uptimeS><m:messagesSent>%llu</m:messagesSent>"
                       "<m:requestsServed>%llu</m:requestsServed></m:getStatusResponse>%s",
                       head, sh->enabled ? "true" : "false", (double)(svc_now() - sh->start_ns) / 1e9,
                       (unsigned long long)sh->messages_sent, (unsigned long long)m->requests, tail);
    m->responses_ok++;
    svc_http_respond(c, 200, "text/xml; charset=utf-8", out, (size_t)len, close_after);
#else
    (void)sh, (void)body, (void)n;
    svc_soap_fault(m, c, 500, "Server", "built without expat: cannot parse SOAP", close_after);
#endif
}

/* Answers the whole request at in_off (header hlen, body blen bytes). */
void svc_soap_serve(svc_mgmt *m, svc_shared *sh, mconn *c, size_t hlen, size_t blen)
{
    const char *p = c->in + c->in_off;
    const char *conn_h = svc_http_header(p, hlen, "Connection");
    int close_after = !m->keepalive || (conn_h && strncasecmp(conn_h, "close", 5) == 0) ||
                      memmem(p, hlen < 16 ? hlen : 16, "HTTP/1.0", 8) != NULL;
    if (strncmp(p, "GET ", 4) == 0) {
        const char *sp = memchr(p + 4, ' ', hlen - 4);
        size_t tl = sp ? (size_t)(sp - p - 4) : 0;
        if (tl >= 5 && memcmp(p + 4 + tl - 5, "?wsdl", 5) == 0) {
            char w[sizeof wsdl_fmt + 128];
            int wn = snprintf(w, sizeof w, wsdl_fmt, m->bind_addr, m->port);
            m->responses_ok++;
            svc_http_respond(c, 200, "text/xml; charset=utf-8", w, (size_t)wn, close_after);
        } else
            svc_soap_fault(m, c, 404, "Client", "not found: GET serves only ?wsdl; POST SOAP requests to /vdm",
                           close_after);
    } else if (strncmp(p, "POST ", 5) == 0)
        soap_call(m, sh, c, p + hlen, blen, close_after);
    else
        svc_soap_fault(m, c, 405, "Client", "method not allowed: use POST (SOAP) or GET ?wsdl", 1);
}

void svc_mgmt_json(const svc_mgmt *mc, bk_json *j)
{
    svc_mgmt *m = (svc_mgmt *)mc; /* the summary sorts the samples in place */
    svc_json_begin(j, "mgmt");
    bk_json_kv_bool(j, "keepalive", m->keepalive);
    bk_json_kv_bool(j, "nodelay", m->nodelay);
    bk_json_kv_uint(j, "connections", m->connections);
    bk_json_kv_uint(j, "requests", m->requests);
    bk_json_kv_uint(j, "responses_ok", m->responses_ok);
    bk_json_kv_uint(j, "faults", m->faults);
    bk_json_kv_uint(j, "malformed", m->malformed);
    bk_json_kv_uint(j, "too_large", m->too_large);
    bk_json_kv_uint(j, "stalls", m->stalls);
    /* 503: over the connection limit or out of descriptors */
    bk_json_kv_uint(j, "refused", m->refused);
    /* 408: a header or body not in time */
    bk_json_kv_uint(j, "timeouts", m->timeouts);
    bk_json_kv_uint(j, "idle_closed", m->idle_closed);
    /* serving paused: a peer not reading its responses */
    bk_json_kv_uint(j, "output_stalls", m->output_stalls);
    bk_json_kv_uint(j, "accept_backoffs", m->accept_backoffs);
    bk_json_key_object(j, "limits");
    bk_json_kv_int(j, "max_connections", m->conn_limit);
    bk_json_kv_int(j, "max_request_bytes", m->max_request_bytes);
    bk_json_kv_int(j, "max_output_bytes", m->max_output_bytes);
    bk_json_kv_int(j, "header_timeout_ms", m->header_timeout_ms);
    bk_json_kv_int(j, "body_timeout_ms", m->body_timeout_ms);
    bk_json_kv_int(j, "idle_timeout_ms", m->idle_timeout_ms);
    bk_json_end_object(j);
    bk_json_kv_int(j, "rt_priority", m->rt_errno ? 0 : m->rt_priority);
    bk_json_kv_str(j, "rt_priority_error", m->rt_errno ? strerror(m->rt_errno) : NULL);
    bk_json_key_object(j, "operations");
    for (int i = 0; i < 3; i++) {
        bk_json_kv_uint(j, op_names[i], m->ops[i]);
    }
    bk_json_end_object(j);
    svc_json_summary(j, "service_ns", &m->service_ns);
    bk_json_kv_str(j, "error", m->error[0] ? m->error : NULL);
    bk_json_end_object(j);
}
