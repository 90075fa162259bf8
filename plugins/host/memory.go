package host

// Register implements plugin.Device. Host memory is already usable by the
// host device; registration only keeps the reference-counted book LLVM
// keeps: the same or a contained range adds a user, a partial overlap is
// refused. The device address is the host address.
func (d *Device) Register(ptr uintptr, size uint64) (uintptr, error) {
	if _, err := d.pinned.Add(ptr, size); err != nil {
		return 0, err
	}
	return ptr, nil
}

// Unregister implements plugin.Device: drops one user of the range that
// contains ptr.
func (d *Device) Unregister(ptr uintptr) error {
	_, _, _, err := d.pinned.Remove(ptr)
	return err
}
