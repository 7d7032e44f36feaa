/* The GPS line, shared by the publisher's sensor reader (svc.pub source=nmea) and the GPS feeder (svc.nmea):
 * NMEA 0183 sentences (checksum, GGA/RMC parsing) and the serial line's settings. */
#include "svc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>

/* ---- NMEA 0183 ---- */

static unsigned nmea_checksum(const char *body, size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c ^= (unsigned char)body[i];
    return c;
}

/* "$BODY*CS\r\n" from BODY; returns the length. */
int svc_nmea_sentence(char *out, size_t cap, const char *body)
{
    return snprintf(out, cap, "$%s*%02X\r\n", body, nmea_checksum(body, strlen(body)));
}

/* Checks "$...*CS" and returns 0 when the checksum matches. */
static int nmea_valid(const char *line)
{
    const char *star = strchr(line, '*');
    if (line[0] != '$' || !star || !isxdigit((unsigned char)star[1]) || !isxdigit((unsigned char)star[2]))
        return -1;
    unsigned want = (unsigned)strtoul((char[]){star[1], star[2], 0}, NULL, 16);
    return nmea_checksum(line + 1, (size_t)(star - line - 1)) == want ? 0 : -1;
}

static double nmea_deg(const char *v, const char *hemi)
{
    double x = atof(v);
    double deg = floor(x / 100.0);
    double d = deg + (x - deg * 100.0) / 60.0;
    return (*hemi == 'S' || *hemi == 'W') ? -d : d;
}

/* Updates the fix from GGA (position, altitude, fix quality) and RMC (course, speed). 0 when used. */
int svc_nmea_apply(const char *line, svc_fix *f)
{
    if (nmea_valid(line) != 0)
        return -1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    char *fld[20] = {0};
    int n = 0;
    for (char *p = buf; n < 20 && p;) {
        fld[n++] = p;
        char *c = strpbrk(p, ",*");
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    if (n >= 10 && strcmp(fld[0] + 3, "GGA") == 0) {
        f->lat_deg = nmea_deg(fld[2], fld[3]);
        f->lon_deg = nmea_deg(fld[4], fld[5]);
        f->fix = atoi(fld[6]);
        f->alt_m = atof(fld[9]);
        return 0;
    }
    if (n >= 9 && strcmp(fld[0] + 3, "RMC") == 0) {
        f->speed_mps = atof(fld[7]) * 0.514444;
        f->course_deg = atof(fld[8]);
        return 0;
    }
    return 1; /* valid but not used (GSA, GSV) */
}

/* The termios speed of a baud rate; 0 when termios has none. */
speed_t svc_baud_speed(int baud)
{
    switch (baud) {
    case 1200: return B1200;
    case 2400: return B2400;
    case 4800: return B4800;
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default: return 0;
    }
}

/* A serial line as a GPS uses it: `baud` 8N1, no flow control, modem lines ignored, no output
 * processing (NMEA lines end in CR LF already: ONLCR would make that CR CR LF). A pty takes the same
 * settings and ignores the speed, so a pty pair stands in for a UART in the tests. */
void svc_serial_8n1(struct termios *t, speed_t speed)
{
    cfsetispeed(t, speed);
    cfsetospeed(t, speed);
    t->c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS);
    t->c_cflag |= CS8 | CREAD | CLOCAL;
    t->c_oflag &= ~(tcflag_t)OPOST;
}
