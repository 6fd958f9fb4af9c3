#!/usr/bin/python3
"""A stand-in for systemd-logind on a private D-Bus (tests/integration/node_shutdown.sh).

Owns org.freedesktop.login1 and org.freedesktop.systemd1 on the bus of
DBUS_STARTER_ADDRESS / argv[1] and implements what the agent uses, as logind
does it:
  - org.freedesktop.login1.Manager.Inhibit(what, who, why, mode) -> h: the
    write end of a pipe; the inhibitor lasts until every copy of it is closed
    (logind watches the read end of its FIFO the same way);
  - the InhibitDelayMaxUSec property (from --delay-sec, then from
    InhibitDelayMaxSec= in <conf-dir>/*.conf once reloaded);
  - org.freedesktop.systemd1.Manager.KillUnit("systemd-logind.service", _, 1):
    SIGHUP, the configuration reread;
  - the PrepareForShutdown(b) signal, emitted when the test calls
    org.cubelet.FakeLogind.Emit(b) (logind: when a shutdown is asked for).
Each step is a line in the journal file (argv[2]): "<unix time> <what> ...".
"""
import argparse
import glob
import os
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

MGR = "org.freedesktop.login1.Manager"


def note(path, *words):
    with open(path, "a") as f:
        f.write("%.3f %s\n" % (time.time(), " ".join(str(w) for w in words)))


class Logind(dbus.service.Object):
    def __init__(self, bus, args):
        super().__init__(bus, "/org/freedesktop/login1")
        self.args = args
        self.delay_us = args.delay_sec * 1000000
        self.next_id = 0

    @dbus.service.method(MGR, in_signature="ssss", out_signature="h")
    def Inhibit(self, what, who, why, mode):
        if mode not in ("block", "delay") or not what:
            raise dbus.exceptions.DBusException("Invalid mode or what",
                                                name="org.freedesktop.DBus.Error.InvalidArgs")
        r, w = os.pipe()
        self.next_id += 1
        ident = self.next_id
        note(self.args.journal, "inhibit", ident, what, mode, who, repr(why))

        def released(fd, cond):
            note(self.args.journal, "released", ident)
            os.close(fd)
            return False
        GLib.io_add_watch(r, GLib.IO_HUP | GLib.IO_ERR, released)
        fd = dbus.types.UnixFd(w)
        os.close(w)
        return fd

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss",
                         out_signature="v")
    def Get(self, iface, prop):
        if iface == MGR and prop == "InhibitDelayMaxUSec":
            return dbus.UInt64(self.delay_us, variant_level=1)
        raise dbus.exceptions.DBusException("Unknown property %s" % prop,
                                            name="org.freedesktop.DBus.Error.UnknownProperty")

    def reload(self):
        for path in sorted(glob.glob(os.path.join(self.args.conf_dir, "*.conf"))):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("InhibitDelayMaxSec="):
                        self.delay_us = int(line.split("=", 1)[1]) * 1000000
        note(self.args.journal, "reloaded", "InhibitDelayMaxUSec=%d" % self.delay_us)

    @dbus.service.signal(MGR, signature="b")
    def PrepareForShutdown(self, active):
        pass

    @dbus.service.method("org.cubelet.FakeLogind", in_signature="b", out_signature="")
    def Emit(self, active):
        note(self.args.journal, "prepare", "true" if active else "false")
        self.PrepareForShutdown(active)


class Systemd(dbus.service.Object):
    def __init__(self, bus, logind, args):
        super().__init__(bus, "/org/freedesktop/systemd1")
        self.logind = logind
        self.args = args

    @dbus.service.method("org.freedesktop.systemd1.Manager", in_signature="ssi",
                         out_signature="")
    def KillUnit(self, unit, who, signo):
        note(self.args.journal, "killunit", unit, who, signo)
        if unit == "systemd-logind.service" and signo == 1:
            GLib.timeout_add(50, lambda: self.logind.reload() and False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("journal")
    ap.add_argument("--delay-sec", type=int, default=5)  # logind's default
    ap.add_argument("--conf-dir", default="/etc/systemd/logind.conf.d")
    ap.add_argument("--no-systemd", action="store_true")
    args = ap.parse_args()
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(args.address)
    logind = Logind(bus, args)
    names = [dbus.service.BusName("org.freedesktop.login1", bus)]
    if not args.no_systemd:
        names.append(dbus.service.BusName("org.freedesktop.systemd1", bus))
        Systemd(bus, logind, args)
    note(args.journal, "ready")
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
