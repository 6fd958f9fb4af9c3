#!/usr/bin/python3
"""The little of systemd's D-Bus API a real systemd-logind and the agent use,
on a private bus (tests/integration/node_shutdown_logind.sh). Not a service
manager: it starts nothing, and it can power nothing off.

Owns org.freedesktop.systemd1 on the bus at argv[1] and answers:
  - Manager.Subscribe(): logind subscribes at start (accepted, no signals);
  - Manager.KillUnit("systemd-logind.service", who, signal): the agent's
    reload of logind's configuration (the kubelet's ReloadLogindConf): the
    signal goes to the logind process given with --logind-pid, as systemd
    would send it to the unit's main process; any other unit: NoSuchUnit;
  - Properties.Get(org.freedesktop.systemd1.Unit, LoadState) on the unit
    objects of poweroff.target: "loaded" (logind checks it before it accepts
    PowerOff; without it, it refuses the call outright);
  - Manager.StartUnit(name, mode): refused, always (logind's job for
    poweroff.target fails here, which is where a real systemd would begin
    the shutdown).
Each call is a line in the journal file (argv[2]): "<unix time> <what> ...".
"""
import argparse
import os
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

MGR = "org.freedesktop.systemd1.Manager"
UNITS = {"poweroff.target": "/org/freedesktop/systemd1/unit/poweroff_2etarget"}


def note(path, *words):
    with open(path, "a") as f:
        f.write("%.3f %s\n" % (time.time(), " ".join(str(w) for w in words)))


class Manager(dbus.service.Object):
    def __init__(self, bus, args):
        super().__init__(bus, "/org/freedesktop/systemd1")
        self.args = args

    @dbus.service.method(MGR, in_signature="", out_signature="")
    def Subscribe(self):
        note(self.args.journal, "subscribe")

    @dbus.service.method(MGR, in_signature="ssi", out_signature="")
    def KillUnit(self, unit, who, signo):
        note(self.args.journal, "killunit", unit, who, signo)
        if unit != "systemd-logind.service":
            raise dbus.exceptions.DBusException(
                "Unit %s not loaded." % unit, name="org.freedesktop.systemd1.NoSuchUnit")
        os.kill(self.args.logind_pid, int(signo))

    @dbus.service.method(MGR, in_signature="ss", out_signature="o")
    def StartUnit(self, name, mode):
        note(self.args.journal, "startunit", name, mode, "refused")
        raise dbus.exceptions.DBusException(
            "this test's stand-in for systemd starts no unit (%s): nothing is shut down" % name,
            name="org.cubelet.Test.Refused")


class Unit(dbus.service.Object):
    def __init__(self, bus, path, name, args):
        super().__init__(bus, path)
        self.name = name
        self.args = args

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss",
                         out_signature="v")
    def Get(self, iface, prop):
        note(self.args.journal, "get", self.name, iface, prop)
        if iface == "org.freedesktop.systemd1.Unit" and prop == "LoadState":
            return dbus.String("loaded", variant_level=1)
        raise dbus.exceptions.DBusException("Unknown property %s" % prop,
                                            name="org.freedesktop.DBus.Error.UnknownProperty")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("journal")
    ap.add_argument("--logind-pid", type=int, required=True)
    args = ap.parse_args()
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(args.address)
    Manager(bus, args)
    units = [Unit(bus, path, name, args) for name, path in UNITS.items()]
    name = dbus.service.BusName("org.freedesktop.systemd1", bus)
    note(args.journal, "ready")
    GLib.MainLoop().run()
    del name, units


if __name__ == "__main__":
    main()
